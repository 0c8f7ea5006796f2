/**
 * CPU a satellite spends with no invocation open.
 *
 * A satellite works only while it answers: a Worker or a timer loop left
 * running after the answer would keep a core busy until the idle reaper, up
 * to a day later. Between invocations the broker meters the process tree (or
 * its cgroup) and stops a satellite that spends more than a small budget.
 */
import { readFileSync } from "node:fs";
import { processTree } from "./memory-watch.js";

/** Linux reports utime/stime in USER_HZ ticks, fixed at 100 per second for userspace. */
const MS_PER_TICK = 10;

/** CPU milliseconds used so far by `pid`'s whole tree (threads included; exited children are not). */
export function treeCpuMs(pid: number): number {
  let total = 0;
  for (const p of processTree(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      // Fields after the command name, which may itself hold spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      total += (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

export interface IdleCpuBudget {
  /** CPU ms an idle satellite may spend at once (a GC, a finishing promise chain). */
  readonly burstMs: number;
  /** Share of wall time it may spend on top, for light timers (0.02 = 2%). */
  readonly share: number;
  readonly everyMs: number;
}

export const DEFAULT_IDLE_CPU: IdleCpuBudget = { burstMs: 1_000, share: 0.02, everyMs: 1_000 };

/**
 * Meters one idle period from now: calls `onExceeded(usedMs, wallMs)` once if the
 * satellite spends more than the budget before the returned stop function is called.
 */
export function watchIdleCpu(readCpuMs: () => number, budget: IdleCpuBudget, onExceeded: (usedMs: number, wallMs: number) => void): () => void {
  const startCpu = readCpuMs();
  const startWall = Date.now();
  const timer = setInterval(() => {
    const used = readCpuMs() - startCpu;
    const wall = Date.now() - startWall;
    if (used > budget.burstMs + budget.share * wall) {
      clearInterval(timer);
      onExceeded(used, wall);
    }
  }, budget.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
