/**
 * One satellite's cgroup: made with its limits written, read while it runs,
 * killed and removed when it ends.
 *
 * Layout, in this process's own cgroup of each hierarchy:
 * `tether-<broker pid>/<label>-<random>`. A separate launcher joins a satellite
 * by writing "0" to each of `procsFiles` before exec'ing bwrap, so the jail's
 * cgroup namespace is rooted at the satellite's group.
 *
 * Detection is `cgroup-detect.ts`, the bounds `cgroup-limits.ts`, the sweep of
 * dead brokers' groups `cgroup-sweep.ts`.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { detectCgroups, type CgroupMode, type V1Roots } from "./cgroup-detect.js";
import { code, keyed, parentName, randomSuffix, readNumber, tryRmdir, tryWrite, unique } from "./cgroup-fs.js";
import { CFS_PERIOD_US, quotaUs, type SatelliteLimits } from "./cgroup-limits.js";
import { emptyGroups, killGroups, rmdirPatiently } from "./cgroup-teardown.js";

// Importers outside broker/jail/ (the broker, the satellite process) take these from here.
export { satelliteLimits } from "./cgroup-limits.js";
export { sweepStaleCgroups } from "./cgroup-sweep.js";
export type { CgroupMode } from "./cgroup-detect.js";

export interface SatelliteCgroup {
  readonly kind: "v1" | "v2";
  /** The group's directories, one per hierarchy (one on v2). */
  readonly dirs: readonly string[];
  /** The files the launcher writes "0" into, to join the group itself. */
  readonly procsFiles: readonly string[];
  /** Current charge, tmpfs/shmem included. */
  memoryBytes(): number;
  /** Highest charge seen, where the kernel keeps it (v1; v2 from 5.19). */
  memoryPeakBytes(): number | null;
  /** Cumulative CPU time of the group, or null without a cpuacct hierarchy (v1). */
  cpuNanos(): number | null;
  /** True once the kernel's OOM killer killed a task of the group. */
  oomKilled(): boolean;
  /** SIGKILLs everything in the group (v2: cgroup.kill). Does not wait. */
  kill(): void;
  /**
   * Kills, waits for the group to empty, removes its directories;
   * the readers then answer their last values. Never throws.
   */
  remove(): Promise<void>;
}

// ---- one satellite's group

/**
 * A fresh group for one satellite under `tether-<broker pid>`, or null when the
 * host offers none under `mode` (mode none included) or it could not be made; the
 * RSS watchdog and sized mounts still bound memory then.
 */
export function createSatelliteCgroup(
  label: string,
  limits: SatelliteLimits,
  mode: CgroupMode = "auto",
): SatelliteCgroup | null {
  if (!(limits.memoryBytes >= 4096) || !(limits.pids >= 1) || !(limits.cpuQuota > 0)) {
    throw new RangeError(`cgroup limits out of range: ${JSON.stringify(limits)}`);
  }
  const support = detectCgroups(mode);
  if (support.kind === "none") return null;
  const name = `${label.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 40) || "satellite"}-${randomSuffix()}`;
  try {
    return support.kind === "v1" ? createV1(support.roots, name, limits) : createV2(support.root, name, limits);
  } catch {
    return null;
  }
}

interface Readers {
  memoryBytes(): number;
  memoryPeakBytes(): number | null;
  cpuNanos(): number | null;
  oomKilled(): boolean;
}

function group(kind: "v1" | "v2", dirs: string[], live: Readers): SatelliteCgroup {
  let last: {
    memoryBytes: number;
    memoryPeakBytes: number | null;
    cpuNanos: number | null;
    oomKilled: boolean;
  } | null = null;
  let removing: Promise<void> | null = null;
  const read = <T>(now: () => T, after: () => T): T => {
    if (last !== null) return after();
    try {
      return now();
    } catch {
      return after(); // removed under us
    }
  };
  const snapshot = (): void => {
    last = {
      memoryBytes: 0,
      memoryPeakBytes: attempt(live.memoryPeakBytes, null),
      cpuNanos: attempt(live.cpuNanos, null),
      oomKilled: attempt(live.oomKilled, false),
    };
  };
  return {
    kind,
    dirs,
    procsFiles: dirs.map((d) => join(d, "cgroup.procs")),
    memoryBytes: () => read(live.memoryBytes, () => 0),
    memoryPeakBytes: () => read(live.memoryPeakBytes, () => last?.memoryPeakBytes ?? null),
    cpuNanos: () => read(live.cpuNanos, () => last?.cpuNanos ?? null),
    oomKilled: () => read(live.oomKilled, () => last?.oomKilled ?? false),
    kill: () => killGroups(dirs),
    remove: () =>
      (removing ??= (async () => {
        try {
          await emptyGroups(dirs);
        } finally {
          snapshot();
          for (const d of dirs) await rmdirPatiently(d);
        }
      })().catch(() => undefined)),
  };
}

// ---- making it, with its limits written (v1: one group per hierarchy; v2: one)

function createV1(roots: V1Roots, name: string, limits: SatelliteLimits): SatelliteCgroup {
  const at = (root: string): string => join(root, parentName(), name);
  const memory = at(roots.memory);
  const cpuacct = roots.cpuacct === null ? null : at(roots.cpuacct);
  const dirs = unique([memory, at(roots.pids), at(roots.cpu), ...(cpuacct === null ? [] : [cpuacct])]);
  try {
    for (const d of dirs) mkdirSync(d, { recursive: true });
    const bytes = String(Math.floor(limits.memoryBytes));
    writeFileSync(join(memory, "memory.limit_in_bytes"), bytes);
    // memory+swap as well where swap is accounted; where it is not, keep the group's anon pages out of swap.
    if (existsSync(join(memory, "memory.memsw.limit_in_bytes")))
      writeFileSync(join(memory, "memory.memsw.limit_in_bytes"), bytes);
    else tryWrite(join(memory, "memory.swappiness"), "0");
    writeFileSync(join(at(roots.pids), "pids.max"), String(Math.floor(limits.pids)));
    writeFileSync(join(at(roots.cpu), "cpu.cfs_period_us"), String(CFS_PERIOD_US));
    try {
      writeFileSync(join(at(roots.cpu), "cpu.cfs_quota_us"), String(quotaUs(limits.cpuQuota) ?? -1));
    } catch (err) {
      // v1 refuses a quota above an ancestor's (EINVAL); that tighter one then bounds the group.
      if (code(err) !== "EINVAL") throw err;
    }
  } catch (err) {
    for (const d of dirs) tryRmdir(d);
    throw err;
  }
  return group("v1", dirs, {
    memoryBytes: () => readNumber(join(memory, "memory.usage_in_bytes")),
    memoryPeakBytes: () => readNumber(join(memory, "memory.max_usage_in_bytes")),
    cpuNanos: () => (cpuacct === null ? null : readNumber(join(cpuacct, "cpuacct.usage"))),
    oomKilled: () => keyed(join(memory, "memory.oom_control"), "oom_kill") > 0,
  });
}

function createV2(root: string, name: string, limits: SatelliteLimits): SatelliteCgroup {
  const dir = join(root, parentName(), name);
  mkdirSync(dir);
  try {
    writeFileSync(join(dir, "memory.max"), String(Math.floor(limits.memoryBytes)));
    tryWrite(join(dir, "memory.swap.max"), "0"); // absent without swap support
    tryWrite(join(dir, "memory.oom.group"), "1"); // the whole satellite dies together (4.19+)
    writeFileSync(join(dir, "pids.max"), String(Math.floor(limits.pids)));
    writeFileSync(join(dir, "cpu.max"), `${quotaUs(limits.cpuQuota) ?? "max"} ${CFS_PERIOD_US}`);
  } catch (err) {
    tryRmdir(dir);
    throw err;
  }
  return group("v2", [dir], {
    memoryBytes: () => readNumber(join(dir, "memory.current")),
    memoryPeakBytes: () => (existsSync(join(dir, "memory.peak")) ? readNumber(join(dir, "memory.peak")) : null),
    cpuNanos: () => keyed(join(dir, "cpu.stat"), "usage_usec") * 1000,
    oomKilled: () =>
      keyed(join(dir, "memory.events"), "oom_kill") > 0 || keyed(join(dir, "memory.events"), "oom_group_kill") > 0,
  });
}

function attempt<T>(f: () => T, fallback: T): T {
  try {
    return f();
  } catch {
    return fallback;
  }
}
