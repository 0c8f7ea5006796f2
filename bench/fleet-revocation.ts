/**
 * Revocation latency across a fleet (docs/fleet.md): two brokers in this
 * process, each with a home of its own, joined to one real PostgreSQL server
 * started for the bench. Host a revokes (the library's `revoke`, then the
 * publish a `tether revoke --store` makes); the time measured runs from just
 * before that publish to the moment host b stops its running satellite of
 * the extension (b's log line, written as the satellite is told to stop).
 * Measured with changes pushed (LISTEN/NOTIFY), pushed with b's listening
 * connection terminated just before each revocation, and with polling alone (every
 * 500 ms, the default: the fallback, and the mode behind a pooler that does not carry
 * LISTEN). Between rounds a re-approval is published and b's satellite booted
 * again by a call.
 *
 *   npx tsx bench/fleet-revocation.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import pg from "pg";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../broker/broker.js";
import { FleetMember } from "../broker/fleet.js";
import { createLogger } from "../broker/base/log.js";
import { readEnvironment } from "../broker/cli/environment.js";
import { startPostgres } from "../tests/support/postgres-server.js";
import { ECHO_DIR } from "./lib/home.js";
import { median, quantile, table } from "./lib/stats.js";
import { provisionOperatorKey } from "../tests/support/operator-key.js";

/** Whole milliseconds: the latencies are tens to hundreds of them. */
const ms = (x: number): string => String(Math.round(x));

const ROUNDS = 20;
const POLL_MS = 500;

async function until(test: () => boolean): Promise<void> {
  for (let waited = 0; !test(); waited += 5) {
    if (waited > 30_000) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** pushed: LISTEN/NOTIFY; listen-broken: b's listening connection terminated just before each revocation; polled: no LISTEN. */
type Mode = "pushed" | "listen-broken" | "polled";

async function measure(url: string, mode: Mode): Promise<number[]> {
  const push = mode !== "polled";
  const admin = new pg.Client({ connectionString: url });
  admin.on("error", () => {});
  await admin.connect();
  // One operator key for both homes: a signs its approvals, b trusts them (docs/fleet.md#operator-keys).
  const homes = [
    mkdtempSync(join(tmpdir(), "tether-bench-fleet-a-")),
    mkdtempSync(join(tmpdir(), "tether-bench-fleet-b-")),
  ].map(provisionOperatorKey);
  const { home: _home, ...env } = readEnvironment(process.env);
  let stoppedAt = 0;
  const a = Broker.open({ ...env, home: homes[0]!, log: createLogger({ level: "error" }), extensionLogs: false });
  const b = Broker.open({
    ...env,
    home: homes[1]!,
    extensionLogs: false,
    log: createLogger({
      level: "warn",
      sink: (_level, message) => void (/approval revoked/.test(message) && (stoppedAt = performance.now())),
    }),
  });
  const ma = await FleetMember.join(a, { url, host: `a-${mode}`, listen: false });
  const mb = await FleetMember.join(b, { url, host: `b-${mode}`, push, pollMs: POLL_MS });
  const samples: number[] = [];
  try {
    await a.registry.install(ECHO_DIR);
    const name = a.registry.list()[0]!.name;
    const tool = a.registry.get(name)!.manifest.tool[0]!.name;
    for (let round = 0; round < ROUNDS; round++) {
      a.registry.approve(name);
      await ma.publish();
      await until(() => b.registry.get(name) !== null && b.registry.status(b.registry.get(name)!) === "approved");
      const ran = await b.callTool(name, tool, JSON.stringify({ text: "x" }), { session: "s" });
      if (!ran.ok) throw new Error(`the call on host b failed: ${ran.error.code} ${ran.error.msg}`);
      stoppedAt = 0;
      if (mode === "listen-broken") {
        const killed = await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
        );
        if (killed.rowCount === 0) throw new Error("no listening connection to terminate");
      }
      a.registry.revoke(name);
      const t0 = performance.now();
      await ma.publish();
      await until(() => stoppedAt !== 0);
      samples.push(stoppedAt - t0);
    }
  } finally {
    await admin.end();
    await ma.close();
    await mb.close();
    await a.close();
    await b.close();
    for (const home of homes) rmSync(home, { recursive: true, force: true });
  }
  return samples;
}

async function main(): Promise<void> {
  const server = await startPostgres();
  try {
    const pushed = (await measure(server.url, "pushed")).sort((x, y) => x - y);
    const broken = (await measure(server.url, "listen-broken")).sort((x, y) => x - y);
    const polled = (await measure(server.url, "polled")).sort((x, y) => x - y);
    console.log(
      `fleet revocation latency: revoke published on host a → host b stops its satellite (ms, ${ROUNDS} rounds each)`,
    );
    console.log(
      table(
        ["changes", "median", "p95", "max"],
        [
          ["pushed (LISTEN/NOTIFY)", ms(median(pushed)), ms(quantile(pushed, 0.95)), ms(pushed.at(-1)!)],
          [
            "pushed, the listening connection just terminated",
            ms(median(broken)),
            ms(quantile(broken, 0.95)),
            ms(broken.at(-1)!),
          ],
          [`polled every ${POLL_MS} ms`, ms(median(polled)), ms(quantile(polled, 0.95)), ms(polled.at(-1)!)],
        ],
      ),
    );
  } finally {
    await server.stop();
  }
}

await main();
