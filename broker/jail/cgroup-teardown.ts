/**
 * Killing everything in a set of groups and removing them, patiently: shared by
 * a satellite's own teardown (`cgroup.ts`) and the sweep of dead brokers'
 * groups (`cgroup-sweep.ts`).
 */
import { existsSync, rmdirSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { code, readText, tryWrite } from "./cgroup-fs.js";

const TEARDOWN_MS = 10_000;

/** SIGKILLs every task in the groups, again while new pids appear (a fork racing the first pass). v2: cgroup.kill. */
export function killGroups(dirs: readonly string[]): void {
  const signalled = new Set<number>();
  for (let pass = 0; pass < 100; pass++) {
    let fresh = 0;
    for (const d of dirs) {
      // v2, 5.14+: the kernel kills the whole subtree, race-free.
      if (existsSync(join(d, "cgroup.kill")) && tryWrite(join(d, "cgroup.kill"), "1")) continue;
      for (const pid of pidsIn(d)) {
        if (pid === process.pid) continue;
        if (!signalled.has(pid)) fresh++;
        signalled.add(pid);
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    if (fresh === 0) return;
  }
}

function pidsIn(dir: string): number[] {
  try {
    return readText(join(dir, "cgroup.procs"))
      .split("\n")
      .filter((s) => s !== "")
      .map(Number);
  } catch {
    return [];
  }
}

/** Kills until no group lists a task (a killed task leaves at exit; zombies do not count), bounded. */
export async function emptyGroups(dirs: readonly string[]): Promise<void> {
  const deadline = Date.now() + TEARDOWN_MS;
  for (;;) {
    killGroups(dirs);
    if (dirs.every((d) => pidsIn(d).length === 0) || Date.now() > deadline) return;
    await sleep(10);
  }
}

export async function rmdirPatiently(dir: string): Promise<void> {
  const deadline = Date.now() + TEARDOWN_MS;
  for (;;) {
    try {
      rmdirSync(dir);
      return;
    } catch (err) {
      // EBUSY: a task is still leaving. Anything else (ENOENT: already gone) is final.
      if (code(err) !== "EBUSY" || Date.now() > deadline) return;
    }
    await sleep(10);
  }
}
