/**
 * The fleet's record of its hosts: each broker host's name, when it was last
 * seen, its clock's offset from the server's and its version (`tether doctor
 * --store` compares the offsets; `tether status` lists the hosts).
 */
import { sql } from "drizzle-orm";
import type { PgStore } from "./open.js";
import { hosts } from "./schema.js";

/**
 * How often a joined host writes its row (a host silent for longer than this and a
 * staleness bound has stopped, or cannot reach the store and refuses every call).
 */
export const SEEN_EVERY_MS = 10_000;

/** Records `host` as seen now; returns its clock's offset from the server's (ms, the server's minus this host's). */
export async function recordHost(
  store: PgStore,
  host: string,
  version: string,
): Promise<{ skewMs: number; serverNow: number }> {
  const before = Date.now();
  const serverNow = Number(
    (await store.pool.query<{ t: string }>("SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS t"))
      .rows[0]!.t,
  );
  // The server's clock against the midpoint of the round trip.
  const skewMs = Math.round(serverNow - (before + Date.now()) / 2);
  await store.orm
    .insert(hosts)
    .values({ name: host, clockSkewMs: skewMs, version })
    .onConflictDoUpdate({
      target: hosts.name,
      set: { clockSkewMs: skewMs, version, seenAt: sql`((extract(epoch from clock_timestamp()) * 1000)::bigint)` },
    });
  return { skewMs, serverNow };
}

export interface HostView {
  readonly name: string;
  readonly seenAt: number;
  readonly version: string;
  readonly clockSkewMs: number;
  /** The sessions this host serves now (a live lease), each with the broker process holding it. */
  readonly sessions: ReadonlyArray<{ readonly id: string; readonly process: string; readonly until: number }>;
}

/** Every host the fleet has seen, newest first, with the sessions each holds now (`tether status`). */
export async function fleetHosts(store: PgStore): Promise<HostView[]> {
  const hostRows = (
    await store.pool.query<{ name: string; seen_at: string; version: string; clock_skew_ms: string }>(
      "SELECT name, seen_at, version, clock_skew_ms FROM hosts ORDER BY seen_at DESC, name",
    )
  ).rows;
  // A lease's holder is "<host>/<pid>": one broker process of that host.
  const leases = (
    await store.pool.query<{ session_id: string; host: string; expires_at: string }>(
      "SELECT session_id, host, expires_at FROM session_leases WHERE expires_at > " +
        "(extract(epoch from clock_timestamp()) * 1000)::bigint ORDER BY session_id",
    )
  ).rows;
  const views = hostRows.map((h) => ({
    name: h.name,
    seenAt: Number(h.seen_at),
    version: h.version,
    clockSkewMs: Number(h.clock_skew_ms),
    sessions: [] as Array<{ id: string; process: string; until: number }>,
  }));
  for (const lease of leases) {
    const slash = lease.host.lastIndexOf("/");
    const name = slash < 0 ? lease.host : lease.host.slice(0, slash);
    let view = views.find((v) => v.name === name);
    if (view === undefined) views.push((view = { name, seenAt: 0, version: "?", clockSkewMs: 0, sessions: [] }));
    view.sessions.push({
      id: lease.session_id,
      process: slash < 0 ? "" : lease.host.slice(slash + 1),
      until: Number(lease.expires_at),
    });
  }
  return views;
}
