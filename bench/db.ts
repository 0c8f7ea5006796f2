/**
 * What running extensions' SQL in a database process per extension costs
 * (broker/store/db-processes.ts), as ratios against the same statement run in
 * the broker's own process (the floor it replaced, which an endless statement
 * could stall): one statement at a time, and many queued at once.
 *
 *   npx tsx bench/db.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DbProcesses } from "../broker/store/db-processes.js";
import { runStatement } from "../broker/store/ext-db.js";

const N = 2000;
const QUOTA = 1 << 20;

async function main(): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), "tether-bench-db-"));
  const dbs = new DbProcesses(home);
  try {
    const deadline = () => Date.now() + 30_000;
    let t = performance.now();
    for (let i = 0; i < N; i++) runStatement(home, "x", QUOTA, "query", "SELECT ? AS v", [i]);
    const floor = (performance.now() - t) / N;
    await dbs.run("x", QUOTA, "query", "SELECT 1 AS v", undefined, deadline()); // started
    t = performance.now();
    for (let i = 0; i < N; i++) await dbs.run("x", QUOTA, "query", "SELECT ? AS v", [i], deadline());
    const serial = (performance.now() - t) / N;
    t = performance.now();
    await Promise.all(
      Array.from({ length: N }, (_, i) => dbs.run("x", QUOTA, "query", "SELECT ? AS v", [i], deadline())),
    );
    const queued = (performance.now() - t) / N;
    console.log(`db.query SELECT ?, ${N} statements (ms per statement):`);
    console.log(`  in the broker's process (floor): ${floor.toFixed(3)}`);
    console.log(`  database process, one at a time: ${serial.toFixed(3)}  (${(serial / floor).toFixed(1)}× the floor)`);
    console.log(`  database process, ${N} queued:   ${queued.toFixed(3)}  (${(queued / floor).toFixed(1)}× the floor)`);
  } finally {
    dbs.close();
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
