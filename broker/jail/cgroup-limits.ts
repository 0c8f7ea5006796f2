/**
 * The bounds a satellite's cgroup enforces, and their defaults.
 *
 * The kernel enforces these on everything in the jail, at once: the RSS
 * watchdog polls, and does not see tmpfs at all. Memory counts tmpfs/shmem
 * (the jail's /tmp, and /dev/shm on bwrap's unbounded /dev tmpfs): pages are
 * charged to the cgroup that first touched them, and v1's
 * memory.limit_in_bytes, like v2's memory.max, includes shmem; with no swap
 * they cannot be reclaimed, so going past the limit OOM-kills the writer.
 * Tasks count threads, not just processes.
 */
import { rssLimitBytes } from "../satellite/memory-watch.js";
import { JAIL_TMP_BYTES } from "./sandbox.js";

export interface SatelliteLimits {
  /** Everything the group's tasks charge: heap, off-heap, tmpfs/shmem, page cache, kernel memory. */
  readonly memoryBytes: number;
  /** Tasks: processes and threads. */
  readonly pids: number;
  /** CPU time per wall time, as a fraction of one CPU (1.0 = one CPU); Infinity = no quota. */
  readonly cpuQuota: number;
}

/** The default bounds for a satellite whose V8 heap is bounded at `memoryMb`. */
export function satelliteLimits(memoryMb: number): SatelliteLimits {
  // The watchdog's RSS bound plus the jail's /tmp, which RSS never shows but the group is charged for.
  // 128 tasks: Deno is ~7 threads on 2 CPUs (V8 adds up to 16 workers
  // on big hosts, each Worker more); a fork bomb stops there.
  return { memoryBytes: rssLimitBytes(memoryMb) + JAIL_TMP_BYTES, pids: 128, cpuQuota: 1 };
}

/** The CPU accounting period written with every quota (v1 cpu.cfs_period_us, v2 cpu.max). */
export const CFS_PERIOD_US = 100_000;

/** A CPU quota in microseconds per period, or null for no quota. */
export function quotaUs(cpuQuota: number): number | null {
  return Number.isFinite(cpuQuota) ? Math.max(1000, Math.round(cpuQuota * CFS_PERIOD_US)) : null;
}
