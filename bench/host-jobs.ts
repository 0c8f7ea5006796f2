/**
 * What jailing the broker's work on extension bytes costs (broker/jail/host-job.ts):
 * each job run in its jail against the same work with no OS sandbox (the
 * launcher alone: what the broker did before, in a plain child process) and,
 * for bundling, in the broker's own process. Medians of N runs, in one process.
 *
 *   npx tsx bench/host-jobs.ts
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { bundleExtension } from "../broker/install/bundle.js";
import { bundleFolder, runtimeRoot } from "../broker/install/bundle-core.js";
import { readManifest } from "../broker/install/manifest.js";
import { typeCheck } from "../broker/install/type-check.js";
import type { SandboxMode } from "../broker/jail/sandbox.js";
import { DbProcesses } from "../broker/store/db-processes.js";

const N = Number(process.env.BENCH_RUNS ?? 7);
const EXTENSION = resolve(import.meta.dirname ?? ".", "../manifests/notes");

async function median(run: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await run();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

async function firstDbCall(sandbox: SandboxMode): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), "tether-bench-jobs-"));
  const dbs = new DbProcesses(home, { sandbox });
  try {
    const r = await dbs.run("x", 1 << 20, "query", "SELECT 1 AS v", undefined, Date.now() + 30_000);
    if (!r.ok) throw new Error(r.msg);
  } finally {
    dbs.close();
    rmSync(home, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const manifest = readManifest(EXTENSION);
  const root = realpathSync(EXTENSION);
  // Warm: the job scripts are built once per process, the launcher once per machine.
  await bundleExtension(EXTENSION, manifest, { bundleCache: false });
  await firstDbCall("bwrap");

  const rows: Array<[string, number, number, number | null]> = [];
  const inProcess = await median(() => bundleFolder(root, runtimeRoot(), manifest));
  // Kept bundles (broker/install/bundle-cache.ts) off: each run bundles; then one kept bundle found again.
  const bundleNone = await median(() => bundleExtension(EXTENSION, manifest, { sandbox: "none", bundleCache: false }));
  const bundleJail = await median(() => bundleExtension(EXTENSION, manifest, { bundleCache: false }));
  rows.push(["bundle manifests/notes", bundleJail, bundleNone, inProcess]);
  const cache = mkdtempSync(join(tmpdir(), "tether-bench-bundles-"));
  try {
    await bundleExtension(EXTENSION, manifest, { bundleCache: cache });
    const kept = await median(() => bundleExtension(EXTENSION, manifest, { bundleCache: cache }));
    rows.push(["bundle manifests/notes, kept (found again)", kept, bundleNone, inProcess]);
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
  const checkNone = await median(() => typeCheck(EXTENSION, manifest, { sandbox: "none" }));
  const checkJail = await median(() => typeCheck(EXTENSION, manifest));
  rows.push(["type check manifests/notes", checkJail, checkNone, null]);
  const dbNone = await median(() => firstDbCall("none"));
  const dbJail = await median(() => firstDbCall("bwrap"));
  rows.push(["first db.query (process start + statement)", dbJail, dbNone, null]);

  console.log(
    `host-side jobs, median of ${N} runs (ms): jailed | no OS sandbox (launcher only) | in the broker's process`,
  );
  for (const [what, jail, none, own] of rows) {
    const ratio = `${(jail / none).toFixed(2)}× unjailed${own === null ? "" : `, ${(jail / own).toFixed(2)}× in-process`}`;
    console.log(
      `  ${what.padEnd(44)} ${jail.toFixed(0).padStart(6)} | ${none.toFixed(0).padStart(6)} | ${own === null ? "     —" : own.toFixed(0).padStart(6)}   (${ratio})`,
    );
  }
}

await main();
