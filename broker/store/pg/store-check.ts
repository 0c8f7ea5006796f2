/**
 * `tether doctor --store <url>`: the fleet's shared store — that it answers,
 * its migrations (applied at open), and clock skew: this host's against the
 * server's, recorded in `hosts`, and the widest gap between any two hosts
 * seen in the last day (times the fleet compares, such as lease expiry,
 * assume clocks within a second). Opening it checks the role's rights
 * (./rights.ts): one missing fails the check, naming it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { openPgStore, pgMigrationsFolder, shownUrl } from "./open.js";
import { recordHost, SEEN_EVERY_MS } from "./hosts.js";
import { ROLES_DOC } from "./rights.js";
import type { TrustedKey } from "../../fleet-trust/operator-keys.js";
import { judgeApprovals } from "../../fleet-trust/judge-approvals.js";

export interface StoreCheck {
  readonly ok: boolean;
  readonly detail: string;
  readonly server?: string;
  readonly migrations?: number;
  readonly skewMs?: number;
  /** The widest gap between two hosts' clocks, among hosts seen in the last day. */
  readonly fleetSkewMs?: number;
}

/** Clocks further apart than this are a failure. */
export const MAX_SKEW_MS = 1000;

/**
 * `keys`: the public keys this home trusts; every approval row they did not sign is named as refused here.
 * `boundMs`: this home's staleness bound; a host seen in the last hour but silent past its beat and the bound is named.
 */
export async function checkPgStore(
  url: string,
  host: string,
  version: string,
  keys: readonly TrustedKey[] = [],
  boundMs = 10_000,
): Promise<StoreCheck> {
  const shown = shownUrl(url);
  let store;
  try {
    store = await openPgStore(url);
  } catch (err) {
    const message = (err as Error).message;
    // A right missing, or migrations the role cannot apply, are named in full, with what to grant.
    if (message.includes(ROLES_DOC)) return { ok: false, detail: `${shown}: ${message}` };
    return {
      ok: false,
      detail:
        `${shown}: cannot open it: ${message.slice(0, 300)} (check the ` +
        `URL, that the server runs, and the role's rights: ${ROLES_DOC})`,
    };
  }
  try {
    const server = (await store.pool.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!.v;
    const shipped = (
      JSON.parse(readFileSync(join(pgMigrationsFolder(), "meta/_journal.json"), "utf8")) as { entries: unknown[] }
    ).entries.length;
    const applied = Number(
      (await store.pool.query<{ n: string }>("SELECT count(*) AS n FROM drizzle.__drizzle_migrations")).rows[0]!.n,
    );
    const { skewMs, serverNow: at } = await recordHost(store, host, version);
    const range = (
      await store.pool.query<{ lo: string; hi: string; n: string }>(
        "SELECT min(clock_skew_ms) AS lo, max(clock_skew_ms) AS hi, count(*) AS n FROM hosts WHERE seen_at > $1",
        [at - 86_400_000],
      )
    ).rows[0]!;
    const fleetSkewMs = Number(range.hi) - Number(range.lo);
    const problems: string[] = [];
    if (applied !== shipped)
      problems.push(`${applied} of ${shipped} migrations applied (an older broker? upgrade every host)`);
    if (Math.abs(skewMs) > MAX_SKEW_MS)
      problems.push(`this host's clock is ${skewMs} ms from the server's: run NTP (chrony, systemd-timesyncd)`);
    if (fleetSkewMs > MAX_SKEW_MS)
      problems.push(`two hosts' clocks are ${fleetSkewMs} ms apart: run NTP on every host`);
    const { approvalsOfFleet } = await import("./registry-mirror.js");
    const rows = await approvalsOfFleet(store);
    const { refused } = judgeApprovals(rows, keys, []);
    if (keys.length === 0 && rows.length > 0)
      problems.push(
        "this home trusts no operator key, so it serves no approval of " +
          "the fleet: tether key trust <key> (docs/fleet.md#operator-keys)",
      );
    else
      for (const r of refused)
        problems.push(
          `approval #${r.id} of '${r.extension}' is refused here: ${r.why} (docs/fleet.md#the-trust-model)`,
        );
    // Not a failure (a host may have stopped on purpose), but the
    // operator should know: a cut-off host cannot say so itself.
    const silent = (
      await store.pool.query<{ name: string; seen_at: string }>(
        "SELECT name, seen_at FROM hosts WHERE seen_at > $1 AND seen_at < $2 AND name <> $3 ORDER BY name",
        [at - 3_600_000, at - SEEN_EVERY_MS - boundMs, host],
      )
    ).rows;
    const notices = silent.map(
      (h) =>
        `host ${h.name} has been silent for ${Math.round((at - Number(h.seen_at)) / 1000)} ` +
        `s, past its ${SEEN_EVERY_MS / 1000} s beat and the ${boundMs / 1000} s ` +
        `staleness bound: stopped, or cut off from the store and refusing every call`,
    );
    const detail =
      `${shown}: PostgreSQL ${server}, ${applied} of ${shipped} migrations applied, this host ` +
      `(${host}) ${skewMs >= 0 ? "+" : ""}${skewMs} ms from the ` +
      `server, ${range.n} host(s) within ${fleetSkewMs} ms of ` +
      `each other${[...problems, ...notices].length > 0 ? `; ${[...problems, ...notices].join("; ")}` : ""}`;
    return { ok: problems.length === 0, detail, server, migrations: applied, skewMs, fleetSkewMs };
  } finally {
    await store.close();
  }
}
