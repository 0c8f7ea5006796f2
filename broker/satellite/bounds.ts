/**
 * The bounds a running satellite is watched against from the broker's side:
 * its memory (RSS of its process tree, beside the cgroup's hard limit) and the
 * CPU it spends with no invocation open. Each calls `exceeded` once with the
 * sentence the audit and the caller are told.
 */
import type { Logger } from "../base/log.js";
import { satelliteLimits, type SatelliteCgroup } from "../jail/cgroup.js";
import { DEFAULT_IDLE_CPU, IdleCpuMeter, treeCpuMs, type IdleCpuBudget } from "./cpu-watch.js";
import { rssLimitBytes, watchMemory } from "./memory-watch.js";

export type Bound = "cpu" | "memory";
export type BoundExceeded = (bound: Bound, reason: string) => void;

/** Watches the RSS of `pid`'s tree against `memoryMb`; returns the stop function. */
export function watchMemoryBound(pid: number, memoryMb: number, log: Logger, exceeded: BoundExceeded): () => void {
  const limit = rssLimitBytes(memoryMb);
  return watchMemory(pid, limit, (rss) => {
    log.warn("satellite passed its memory bound; stopping it", {
      rssMiB: Math.round(rss / 2 ** 20),
      limitMiB: limit / 2 ** 20,
    });
    exceeded(
      "memory",
      `used ${Math.round(rss / 2 ** 20)} MiB, over its ${limit / 2 ** 20} MiB memory bound ` +
        `(memory_mb ${memoryMb}), and was stopped`,
    );
  });
}

/**
 * Meters the CPU `pid`'s tree (or its cgroup) spends from now; `stillIdle` says whether an overrun
 * still counts. Returns the stop function.
 */
export function meterIdleCpu(
  pid: number,
  cgroup: SatelliteCgroup | null,
  budget: IdleCpuBudget | undefined,
  log: Logger,
  stillIdle: () => boolean,
  exceeded: BoundExceeded,
): IdleCpuMeter {
  const cpuMs = () => {
    const ns = cgroup?.cpuNanos() ?? null;
    return ns === null ? treeCpuMs(pid) : ns / 1e6;
  };
  return new IdleCpuMeter(cpuMs, budget ?? DEFAULT_IDLE_CPU, (used, wall) => {
    if (!stillIdle()) return;
    log.warn("satellite kept running with no invocation open; stopping it", { cpuMs: used, wallMs: wall });
    exceeded(
      "cpu",
      `kept running with no invocation open (${Math.round(used)} ms of CPU in ${wall} ms since its last ` +
        `answer), and was stopped`,
    );
  });
}

/** Why the kernel killed something in its cgroup: it passed the memory bound (heap, buffers and tmpfs together). */
export function cgroupOomReason(memoryMb: number): string {
  const limit = satelliteLimits(memoryMb).memoryBytes / 2 ** 20;
  return (
    `ran out of memory (its cgroup's ${limit} MiB bound: heap, buffers and its /tmp together; ` +
    `memory_mb ${memoryMb}) and was stopped`
  );
}
