/**
 * The fleet's record of its hosts: each broker host's name, when it was last
 * seen, its clock's offset from the server's and its version (`tether doctor
 * --store` compares the offsets; `tether status` lists the hosts).
 */
import { sql } from "drizzle-orm";
import type { PgStore } from "./open.js";
import { hosts } from "./schema.js";

/** Records `host` as seen now; returns its clock's offset from the server's (ms, the server's minus this host's). */
export async function recordHost(store: PgStore, host: string, version: string): Promise<{ skewMs: number; serverNow: number }> {
  const before = Date.now();
  const serverNow = Number((await store.pool.query<{ t: string }>("SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS t")).rows[0]!.t);
  // The server's clock against the midpoint of the round trip.
  const skewMs = Math.round(serverNow - (before + Date.now()) / 2);
  await store.orm
    .insert(hosts)
    .values({ name: host, clockSkewMs: skewMs, version })
    .onConflictDoUpdate({ target: hosts.name, set: { clockSkewMs: skewMs, version, seenAt: sql`((extract(epoch from clock_timestamp()) * 1000)::bigint)` } });
  return { skewMs, serverNow };
}
