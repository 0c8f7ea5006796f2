/**
 * The MCP sessions of a Streamable HTTP endpoint, each one server (server.ts,
 * on the SDK's Streamable HTTP transport) over
 * a Tether session (so every client's calls go through that session's hooks,
 * ledger and approvals):
 *   `Mcp-Session-Id` names an open one bound to this Tether session (else 404)
 *   ─► or an `initialize` opens one (at most `maxSessions`; else 400 / 503).
 * A client that vanished without DELETE leaves its session idle: when the
 * bound is reached, an `initialize` ends the session idle longest among those
 * with no request or stream open, idle for at least `evictIdleMs` (503 when
 * none is); a session idle for IDLE_CLOSE_MS is ended anyway.
 * The Tether sessions are watched: a close ends their MCP sessions (each
 * server tells its own client of a reload: server.ts).
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Session } from "../sessions/session.js";
import { refuse } from "./http-gate.js";
import type { McpEngine } from "./protocol/engine.js";
import { createMcpServer } from "./server.js";

/** MCP sessions open at once; past it an idle one is ended, or the `initialize` refused. */
export const MAX_SESSIONS = 64;
/** How long a session must have been idle (nothing open) before a new client may take its place. */
export const EVICT_IDLE_MS = 30_000;
/** A session idle this long is ended whatever the count. */
export const IDLE_CLOSE_MS = 30 * 60_000;

export interface McpSessionsOptions {
  /** The server's version (its `serverInfo`). */
  readonly version: string;
  /** What the server has to say (hooks' notes, refusals): for the operator, never the model. */
  readonly onNote: (line: string) => void;
  /** Idle time after which a session may give its place to a new one (default EVICT_IDLE_MS). */
  readonly evictIdleMs?: number;
}

interface Open {
  readonly tether: Session;
  readonly transport: StreamableHTTPServerTransport;
  readonly server: McpEngine;
  /** Requests and streams of this session not yet answered or closed. */
  busy: number;
  /** When its last request or stream ended (Date.now()). */
  idleSince: number;
}

export class McpHttpSessions {
  readonly #options: McpSessionsOptions;
  readonly #evictIdleMs: number;
  readonly #open = new Map<string, Open>();
  /** Each Tether session with MCP sessions on it, and how to stop watching it. */
  readonly #watched = new Map<Session, () => void>();
  readonly #sweep: NodeJS.Timeout;

  constructor(options: McpSessionsOptions) {
    this.#options = options;
    this.#evictIdleMs = options.evictIdleMs ?? EVICT_IDLE_MS;
    // Sessions idle past IDLE_CLOSE_MS end whatever the count (a client that left without DELETE).
    this.#sweep = setInterval(() => {
      const now = Date.now();
      for (const [id, o] of this.#open) if (o.busy === 0 && now - o.idleSince >= IDLE_CLOSE_MS) this.#end(id, o);
    }, 60_000);
    this.#sweep.unref();
  }

  /** Serves one admitted request for `tether`'s MCP endpoint. */
  async serve(req: IncomingMessage, res: ServerResponse, body: unknown, tether: Session): Promise<void> {
    const named = req.headers["mcp-session-id"];
    if (typeof named === "string") {
      const existing = this.#open.get(named);
      // A session of another Tether session (or of one closed and opened again) is not this one's.
      if (existing === undefined || existing.tether !== tether)
        return refuse(req, res, { status: 404, message: "Session not found: initialize a new one" });
      return this.#served(existing, res, () => existing.transport.handleRequest(req, res, body));
    }
    if (req.method !== "POST" || !isInitializeRequest(body))
      return refuse(req, res, {
        status: 400,
        message: "Bad request: no Mcp-Session-Id, and not an initialize request",
      });
    if (this.#open.size >= MAX_SESSIONS && !this.#evictIdlest())
      return refuse(req, res, {
        status: 503,
        message: `Too many MCP sessions (${MAX_SESSIONS}), none idle: close one (DELETE) first`,
      });

    const server = createMcpServer(tether, { version: this.#options.version, onNote: this.#options.onNote });
    // Registered once the transport has made the session's id (during the initialize below).
    let entry: Open | null = null;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        if (entry !== null) this.#open.set(sessionId, entry);
      },
      onsessionclosed: (sessionId) => this.#forget(sessionId),
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) this.#forget(transport.sessionId);
    };
    entry = { tether, transport, server, busy: 0, idleSince: Date.now() };
    server.onerror = (err) => this.#options.onNote(`protocol error: ${err.message}`);
    this.#watch(tether);
    await server.connect(transport);
    const created = entry;
    await this.#served(created, res, () => transport.handleRequest(req, res, body));
    // An initialize the transport refused made no session: its server is closed (it watches the
    // Tether session while connected), and nothing is watched for it.
    if (transport.sessionId === undefined || !this.#open.has(transport.sessionId)) {
      await server.close().catch(() => {});
      this.#unwatchIfUnused(tether);
    }
  }

  /** Ends every MCP session (open calls are cancelled). */
  async close(): Promise<void> {
    clearInterval(this.#sweep);
    const all = [...this.#open.values()];
    this.#open.clear();
    for (const unwatch of this.#watched.values()) unwatch();
    this.#watched.clear();
    await Promise.all(all.map((o) => o.server.close().catch(() => {})));
  }

  /** Runs one request of `entry`'s session, counting it busy until its response (or stream) ends. */
  async #served(entry: Open, res: ServerResponse, run: () => Promise<void>): Promise<void> {
    entry.busy += 1;
    res.once("close", () => {
      entry.busy -= 1;
      entry.idleSince = Date.now();
    });
    await run();
  }

  /** Watches `tether` once: its close ends its MCP sessions. */
  #watch(tether: Session): void {
    if (this.#watched.has(tether)) return;
    // A reload each server announces itself (server.ts); a close ends the MCP sessions here.
    const unwatch = tether.onChange((change) => {
      if (change !== "closed") return;
      for (const [id, o] of this.#open) if (o.tether === tether) this.#end(id, o);
      this.#watched.get(tether)?.();
      this.#watched.delete(tether);
    });
    this.#watched.set(tether, unwatch);
  }

  #forget(sessionId: string): void {
    const o = this.#open.get(sessionId);
    this.#open.delete(sessionId);
    if (o !== undefined) this.#unwatchIfUnused(o.tether);
  }

  /** The last MCP session of a Tether session gone: stop watching it. */
  #unwatchIfUnused(tether: Session): void {
    if ([...this.#open.values()].some((other) => other.tether === tether)) return;
    this.#watched.get(tether)?.();
    this.#watched.delete(tether);
  }

  #end(id: string, o: Open): void {
    this.#forget(id);
    void o.server.close().catch(() => {});
  }

  /** Ends the session idle longest among those with nothing open (idle at least evictIdleMs); whether one was. */
  #evictIdlest(): boolean {
    const now = Date.now();
    let idlest: [string, Open] | null = null;
    for (const pair of this.#open) {
      const [, o] = pair;
      if (o.busy > 0 || now - o.idleSince < this.#evictIdleMs) continue;
      if (idlest === null || o.idleSince < idlest[1].idleSince) idlest = pair;
    }
    if (idlest === null) return false;
    const [id, o] = idlest;
    this.#options.onNote(
      `MCP session ${id} ended: idle since ${new Date(o.idleSince).toISOString()}, and a new client needed its place`,
    );
    this.#end(id, o);
    return true;
  }
}
