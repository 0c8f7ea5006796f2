/**
 * What shipping the ledger to the fleet's PostgreSQL store costs a host
 * (broker/store/pg/ledger-shipper.ts). Each host is its own process with its
 * own home store and Ledger, recording calls (begin + an audit row + finish)
 * as fast as it can, yielding to the event loop every 64 calls as a broker
 * does between calls:
 *  1. single host: one host, no shipping (the floor);
 *  2. four hosts, no shipping: the same, four at once (what sharing the
 *     machine's cores costs, apart from shipping);
 *  3. fleet: four hosts at once, each with a LedgerShipper to one PostgreSQL
 *     server (a throwaway one, tests/support/postgres-server.ts: fsync off).
 * Prints calls/s per host, the fleet's against the single host's, and the
 * shipping lag: from a host's last local finish to all its rows in PostgreSQL.
 *
 *   npx tsx bench/fleet-ledger.ts
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Ledger } from "../broker/store/ledger.js";
import { openStore } from "../broker/store/open.js";
import { LedgerShipper } from "../broker/store/pg/ledger-shipper.js";
import { openPgStore } from "../broker/store/pg/open.js";
import { startPostgres } from "../tests/support/postgres-server.js";
import { fmt, table } from "./lib/stats.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const N = Number(process.env.BENCH_N ?? 50_000);
const WARMUP = 2_000;
const HOSTS = 4;

interface HostResult {
  readonly host: string;
  readonly callsPerSec: number;
  /** ms from the last local finish to every row in PostgreSQL; null without shipping. */
  readonly lagMs: number | null;
  readonly fleetRows: number | null;
}

/** One host: waits for "go" on stdin, records N calls, ships, prints its result as JSON. */
async function host(name: string, url: string | null): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), "tether-bench-fleet-"));
  const store = openStore(join(home, "tether.db"));
  const ledger = new Ledger(store);
  const fleet = url === null ? null : await openPgStore(url);
  const shipper = fleet === null ? null : new LedgerShipper(store, fleet, name);
  const record = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const id = ledger.begin({
        sessionId: `bench-${name}`,
        extension: "echo",
        kind: "tool",
        name: "echo",
        strand: "",
      });
      ledger.audit({
        invocationId: id,
        sessionId: `bench-${name}`,
        extension: "echo",
        capability: "report.emit",
        target: "",
        decision: "allowed",
        rule: "builtin:report",
        bytes: 3,
      });
      ledger.finish(id, "ok");
      if (i % 64 === 63) {
        ledger.flush(); // the 20 ms timer batches like this under load
        await new Promise((r) => setImmediate(r)); // a broker's calls are awaited: timers and I/O run between them
      }
    }
    ledger.flush();
  };
  try {
    await record(WARMUP);
    await shipper?.flush();
    shipper?.start();
    process.stdout.write("ready\n");
    await new Promise((r) => createInterface({ input: process.stdin }).once("line", r));
    const started = performance.now();
    await record(N);
    const lastFinish = performance.now();
    await shipper?.flush();
    const shipped = performance.now();
    let fleetRows: number | null = null;
    if (fleet !== null) {
      const { rows } = await fleet.pool.query<{ n: string }>(
        "SELECT (SELECT count(*) FROM fleet_invocations WHERE host = $1 AND outcome = 'ok') + (SELECT count(*) FROM fleet_cap_audit WHERE host = $1) AS n",
        [name],
      );
      fleetRows = Number(rows[0]!.n);
    }
    const result: HostResult = {
      host: name,
      callsPerSec: N / ((lastFinish - started) / 1000),
      lagMs: shipper === null ? null : shipped - lastFinish,
      fleetRows,
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await shipper?.close();
    await fleet?.close();
    ledger.close();
    store.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/** Starts `count` host processes, lets them go at once, and collects their results. */
async function run(count: number, url: string | null): Promise<HostResult[]> {
  const children = Array.from({ length: count }, (_, i) =>
    spawn(process.execPath, ["--import", "tsx", SELF, "--host", `host-${i + 1}`, url ?? "-"], {
      cwd: join(HERE, ".."),
      stdio: ["pipe", "pipe", "inherit"],
    }),
  );
  const lines = children.map((child) => {
    const queue: string[] = [];
    const waiters: Array<(line: string) => void> = [];
    createInterface({ input: child.stdout! }).on("line", (line) =>
      waiters.length > 0 ? waiters.shift()!(line) : queue.push(line),
    );
    child.once("exit", (code) => {
      if (code !== 0) for (const w of waiters.splice(0)) w(JSON.stringify({ error: `host exited ${code}` }));
    });
    return (): Promise<string> =>
      queue.length > 0 ? Promise.resolve(queue.shift()!) : new Promise((resolve) => waiters.push(resolve));
  });
  for (const next of lines) if ((await next()) !== "ready") throw new Error("a host did not start");
  for (const child of children) child.stdin!.end("go\n"); // ended: an open stdin would keep the host alive
  const results = await Promise.all(
    lines.map(async (next) => JSON.parse(await next()) as HostResult & { error?: string }),
  );
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once("exit", r)))));
  for (const r of results) if (r.error !== undefined) throw new Error(r.error);
  return results;
}

async function main(): Promise<void> {
  const server = await startPostgres();
  try {
    await (await openPgStore(server.url)).close(); // migrate once, before the hosts open it
    const single = await run(1, null);
    const apart = await run(HOSTS, null);
    const fleet = await run(HOSTS, server.url);
    for (const r of fleet)
      if (r.fleetRows !== (N + WARMUP) * 2)
        throw new Error(`${r.host}: ${r.fleetRows} rows in PostgreSQL, expected ${(N + WARMUP) * 2}`);
    const mean = (rs: HostResult[], f: (r: HostResult) => number): number =>
      rs.reduce((s, r) => s + f(r), 0) / rs.length;
    const floor = single[0]!.callsPerSec;
    const apartMean = mean(apart, (r) => r.callsPerSec);
    const fleetMean = mean(fleet, (r) => r.callsPerSec);
    console.log(
      `\n== The fleet's ledger: ${N.toLocaleString("en-US")} calls per host (begin + audit row + finish), ${HOSTS} hosts\n`,
    );
    console.log(
      table(
        ["setup", "calls/s per host", "× single host"],
        [
          ["single host, no shipping", fmt(floor), "1.00"],
          [
            `${HOSTS} hosts at once, no shipping`,
            `${fmt(apartMean)} (${apart.map((r) => fmt(r.callsPerSec)).join(", ")})`,
            (apartMean / floor).toFixed(2),
          ],
          [
            `fleet: ${HOSTS} hosts at once, each shipping to one PostgreSQL`,
            `${fmt(fleetMean)} (${fleet.map((r) => fmt(r.callsPerSec)).join(", ")})`,
            (fleetMean / floor).toFixed(2),
          ],
        ],
      ),
    );
    console.log(
      `\nshipping's own cost (fleet against ${HOSTS} hosts not shipping): ${(fleetMean / apartMean).toFixed(2)}×`,
    );
    console.log(
      `shipping lag, last local finish to all rows in PostgreSQL (ms): ${fleet.map((r) => `${r.host} ${fmt(r.lagMs!)}`).join(", ")}`,
    );
    console.log(
      `rows in PostgreSQL: ${fleet.reduce((s, r) => s + r.fleetRows!, 0).toLocaleString("en-US")} (invocations + audit rows, every host's, all shipped)`,
    );
  } finally {
    await server.stop();
  }
}

if (process.argv[2] === "--host") await host(process.argv[3]!, process.argv[4] === "-" ? null : process.argv[4]!);
else await main();
