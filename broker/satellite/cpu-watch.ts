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
 * Meters the CPU one satellite spends with no invocation open, on one timer for
 * the process's life: each tick reads its CPU once, a tick that saw no
 * invocation counts what was spent against the budget, and an invocation starts
 * the count afresh. Nothing is read per call (a call path that read /proc on
 * every answer paid for it on every call); the price is that the rest of the
 * tick in which the last answer came goes unmetered — at most `everyMs` of CPU
 * per core, on top of the burst.
 */
export class IdleCpuMeter {
  readonly #read: () => number;
  readonly #budget: IdleCpuBudget;
  readonly #onExceeded: (usedMs: number, wallMs: number) => void;
  readonly #timer: NodeJS.Timeout;
  #last: number;
  #open = false;
  /** An invocation was open at some point since the last tick. */
  #touched = true;
  #usedMs = 0;
  #wallMs = 0;

  constructor(readCpuMs: () => number, budget: IdleCpuBudget, onExceeded: (usedMs: number, wallMs: number) => void) {
    this.#read = readCpuMs;
    this.#budget = budget;
    this.#onExceeded = onExceeded;
    this.#last = readCpuMs();
    this.#timer = setInterval(() => this.#tick(), budget.everyMs);
    this.#timer.unref();
  }

  opened(): void {
    this.#open = true;
    this.#touched = true;
  }

  closed(): void {
    this.#open = false;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #tick(): void {
    const now = this.#read();
    const spent = now - this.#last;
    this.#last = now;
    if (this.#open || this.#touched) {
      this.#touched = this.#open;
      this.#usedMs = 0;
      this.#wallMs = 0;
      return;
    }
    this.#usedMs += spent;
    this.#wallMs += this.#budget.everyMs;
    if (this.#usedMs > this.#budget.burstMs + this.#budget.share * this.#wallMs) {
      this.stop();
      this.#onExceeded(this.#usedMs, this.#wallMs);
    }
  }
}
