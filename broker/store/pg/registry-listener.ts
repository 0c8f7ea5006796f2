/**
 * Tells a broker when the fleet's registry changed: pushed by the server
 * (`LISTEN tether_registry`, on a connection of its own), and found by
 * polling the registry's version as the fallback — a notification sent while
 * the connection was down is lost, and the poll sees the version moved. A lost
 * connection is opened again (after 0.1 s, doubling to 5 s).
 */
import pg from "pg";
import type { PgStore } from "./open.js";
import { REGISTRY_CHANNEL, registryVersion } from "./registry-mirror.js";

export interface RegistryListenerOptions {
  /** How often the version is polled (default 500 ms: a change is found within 1 s even when no notification comes). */
  readonly pollMs?: number;
  /** The version the caller's copy is at (changes after it are reported). */
  readonly version: () => number;
  /**
   * Whether to LISTEN (default true); false polls only (a pooler in
   * transaction mode, such as PgBouncer's, does not carry LISTEN).
   */
  readonly push?: boolean;
  readonly onError?: (message: string) => void;
  /**
   * The store answered a poll with the registry's version (the
   * host has heard the fleet when its copy is at that version).
   */
  readonly onHeard?: (version: number) => void;
  /** The store did not answer a poll. */
  readonly onMissed?: (err: Error) => void;
}

export interface RegistryListener {
  /** Whether the push connection is up (the poll covers the gaps). */
  readonly listening: boolean;
  close(): Promise<void>;
}

export function listenRegistry(
  url: string,
  fleet: PgStore,
  onChange: () => void,
  options: RegistryListenerOptions,
): RegistryListener {
  let client: pg.Client | null = null;
  let closed = false;
  let listening = false;
  let retryMs = 100;
  let retry: NodeJS.Timeout | null = null;

  const connect = async (): Promise<void> => {
    if (closed) return;
    const c = new pg.Client({ connectionString: url });
    c.on("notification", (n) => {
      if (n.channel === REGISTRY_CHANNEL) onChange();
    });
    c.on("error", (err) => lost(c, err));
    c.on("end", () => lost(c, null));
    try {
      await c.connect();
      await c.query(`LISTEN ${REGISTRY_CHANNEL}`);
    } catch (err) {
      lost(c, err as Error);
      return;
    }
    if (closed) return void c.end().catch(() => {});
    client = c;
    listening = true;
    retryMs = 100;
    // Changes made while it was not listening: the caller pulls, and compares.
    onChange();
  };

  const lost = (c: pg.Client, err: Error | null): void => {
    if (client !== null && client !== c) return;
    client = null;
    listening = false;
    c.removeAllListeners("end");
    c.end().catch(() => {});
    if (closed) return;
    if (err !== null)
      options.onError?.(`the fleet's change notifications stopped (${err.message}); polling until they are back`);
    if (retry === null) {
      retry = setTimeout(() => {
        retry = null;
        void connect();
      }, retryMs);
      retry.unref();
      retryMs = Math.min(retryMs * 2, 5000);
    }
  };

  const poll = setInterval(() => {
    registryVersion(fleet).then(
      (version) => {
        options.onHeard?.(version);
        if (version !== options.version()) onChange();
      },
      (err: Error) => options.onMissed?.(err),
    );
  }, options.pollMs ?? 500);
  poll.unref();

  if (options.push !== false) void connect();
  return {
    get listening() {
      return listening;
    },
    close: async () => {
      closed = true;
      clearInterval(poll);
      if (retry !== null) clearTimeout(retry);
      const c = client;
      client = null;
      listening = false;
      if (c !== null) {
        c.removeAllListeners("end");
        await c.end().catch(() => {});
      }
    },
  };
}
