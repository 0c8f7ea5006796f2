/** What every bench run shares: a private TMPDIR, the machine's load, and the checks that nothing was left behind. */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findBwrap } from "../../broker/jail/sandbox.js";
import { childrenOf, comm, descendants } from "./procs.js";

const start = process.hrtime.bigint();

/** A progress line on stderr, with the seconds since the bench started. */
export function log(msg: string): void {
  process.stderr.write(`bench: ${(Number(process.hrtime.bigint() - start) / 1e9).toFixed(1).padStart(6)} s  ${msg}\n`);
}

/** The 1, 5 and 15 minute load averages. */
export function loadAverage(): string {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

/**
 * Runs `fn` with TMPDIR set to a fresh private folder (every temp file of the run, the satellites'
 * socket folders included, goes there), then removes it. `fn` gets the folder, to check it is empty.
 */
export async function inRunTmp(prefix: string, fn: (runTmp: string) => Promise<void>): Promise<void> {
  const systemTmp = tmpdir();
  const runTmp = mkdtempSync(join(systemTmp, prefix));
  process.env.TMPDIR = runTmp;
  try {
    await fn(runTmp);
  } finally {
    process.env.TMPDIR = systemTmp;
    rmSync(runTmp, { recursive: true, force: true });
  }
}

/** Entries of `runTmp` not matched by `expected` (a warning line each, on stdout, when there are some). */
export function warnLeftovers(runTmp: string, expected: readonly RegExp[] = []): void {
  const left = readdirSync(runTmp).filter((name) => !expected.some((re) => re.test(name)));
  if (left.length > 0)
    process.stdout.write(`\nWARNING: temp files were left behind (removed on exit): ${left.join(", ")}\n`);
}

/**
 * Our descendants named one of `names` (deno, bwrap, node...): everything the run started was closed
 * and awaited, so none may still run. esbuild's service process is not counted: it exits with us.
 */
export function warnStrays(names: readonly string[]): void {
  const strays = childrenOf(process.pid)
    .flatMap((pid) => descendants(pid))
    .filter((pid) => names.includes(comm(pid)))
    .map((pid) => `${comm(pid)}(${pid})`);
  if (strays.length > 0) process.stdout.write(`\nWARNING: processes still running: ${strays.join(", ")}\n`);
}

/** Runs a jail bench: refuses without bwrap (it measures the real jail), runs in a private TMPDIR, reports a failure as the exit code. */
export function runJailBench(prefix: string, run: (runTmp: string) => Promise<void>): void {
  const main = async (): Promise<void> => {
    if (findBwrap() === null) throw new Error("bwrap is not installed; the bench measures the real jail");
    await inRunTmp(prefix, run);
  };
  main().catch((err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
