/**
 * Hard memory, process and CPU bounds for one satellite: a cgroup of its own,
 * where the host offers one to this process.
 *
 * The kernel enforces these on everything in the jail, at once: the RSS
 * watchdog polls, and does not see tmpfs at all. Memory counts tmpfs/shmem
 * (the jail's /tmp, and /dev/shm on bwrap's unbounded /dev tmpfs): pages are
 * charged to the cgroup that first touched them, and v1's
 * memory.limit_in_bytes, like v2's memory.max, includes shmem; with no swap
 * they cannot be reclaimed, so going past the limit OOM-kills the writer.
 * Tasks count threads, not just processes.
 *
 * Layout, in this process's own cgroup of each hierarchy:
 * `tether-<broker pid>/<label>-<random>`; on v2 the broker itself moves to
 * `tether-<pid>/broker` (a cgroup that hands controllers to children may hold
 * no process). A separate launcher joins a satellite by writing "0" to each of
 * `procsFiles` before exec'ing bwrap, so the jail's cgroup namespace is rooted
 * at the satellite's group.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { rssLimitBytes } from "../satellite/memory-watch.js";
import { JAIL_TMP_BYTES } from "./sandbox.js";

/** This process's cgroup in each v1 hierarchy (cpuacct, for CPU time, is optional). */
export interface V1Roots {
  readonly memory: string;
  readonly pids: string;
  readonly cpu: string;
  readonly cpuacct: string | null;
}

/** What the host offers this process; `describe()` is one line for `tether doctor`. */
export type CgroupSupport =
  | { readonly kind: "v2"; readonly root: string; describe(): string }
  | { readonly kind: "v1"; readonly roots: V1Roots; describe(): string }
  | { readonly kind: "none"; readonly why: string; describe(): string };

export interface SatelliteLimits {
  /** Everything the group's tasks charge: heap, off-heap, tmpfs/shmem, page cache, kernel memory. */
  readonly memoryBytes: number;
  /** Tasks: processes and threads. */
  readonly pids: number;
  /** CPU time per wall time, as a fraction of one CPU (1.0 = one CPU); Infinity = no quota. */
  readonly cpuQuota: number;
}

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
  /** Kills, waits for the group to empty, removes its directories; the readers then answer their last values. Never throws. */
  remove(): Promise<void>;
}

/** The default bounds for a satellite whose V8 heap is bounded at `memoryMb`. */
export function satelliteLimits(memoryMb: number): SatelliteLimits {
  // The watchdog's RSS bound plus the jail's /tmp, which RSS never shows but the group is charged for.
  // 128 tasks: Deno is ~7 threads on 2 CPUs (V8 adds up to 16 workers on big hosts, each Worker more); a fork bomb stops there.
  return { memoryBytes: rssLimitBytes(memoryMb) + JAIL_TMP_BYTES, pids: 128, cpuQuota: 1 };
}

const CONTROLLERS = ["memory", "pids", "cpu"] as const;
const CFS_PERIOD_US = 100_000;
const TEARDOWN_MS = 10_000;
const NONE_TAIL = "memory is bounded by sized mounts and the RSS watchdog";

/**
 * Which cgroups to use: `auto` (the default) detects v2, then v1; `v1` or `v2` only that
 * one; `none` none at all (the RSS watchdog and sized mounts still bound memory).
 */
export const CGROUP_MODES = ["auto", "none", "v1", "v2"] as const;
export type CgroupMode = (typeof CGROUP_MODES)[number];

/**
 * What detection found, per mode. Process-wide on purpose: it is a fact of the host and
 * of this process's own cgroup (on v2 the first detection moves the process into its
 * leaf, once), the same for every broker in the process.
 */
const cache = new Map<string, CgroupSupport>();

/** Which cgroups the host offers this process under `mode` (default auto), tested by making a probe group; cached per mode. Never throws. */
export function detectCgroups(mode: CgroupMode = "auto"): CgroupSupport {
  const wanted: string = mode;
  let found = cache.get(wanted);
  if (found === undefined) {
    try {
      found = detect(wanted);
    } catch (err) {
      found = none(`detection failed: ${(err as Error).message}`);
    }
    cache.set(wanted, found);
  }
  return found;
}

function detect(wanted: string): CgroupSupport {
  if (wanted === "none") return none("turned off (cgroup mode none)");
  if (wanted === "v1") return detectV1();
  if (wanted === "v2") return detectV2();
  // A caller without the types (plain JavaScript) may pass anything: said, not thrown.
  if (wanted !== "auto") return none(`cgroup mode '${wanted}' is not one of ${CGROUP_MODES.join(", ")}`);
  const v2 = detectV2();
  if (v2.kind === "v2") return v2;
  const v1 = detectV1();
  const why = (s: CgroupSupport): string => (s.kind === "none" ? s.why : "");
  return v1.kind === "v1" ? v1 : none(`${why(v2)}; ${why(v1)}`);
}

function none(why: string): CgroupSupport {
  return { kind: "none", why, describe: () => `none: ${why}; ${NONE_TAIL}` };
}

// ---- where this process's cgroups are

interface Mount {
  readonly root: string;
  readonly point: string;
  readonly fstype: string;
  readonly options: readonly string[];
}

function mounts(): Mount[] {
  const out: Mount[] = [];
  for (const line of readFileSync("/proc/self/mountinfo", "utf8").split("\n")) {
    const [left, right] = line.split(" - ");
    if (left === undefined || right === undefined) continue;
    const f = left.split(" ");
    const [fstype, , superOptions] = right.split(" ");
    if (f[3] === undefined || f[4] === undefined || fstype === undefined) continue;
    out.push({ root: unescapeMount(f[3]), point: unescapeMount(f[4]), fstype, options: (superOptions ?? "").split(",") });
  }
  return out;
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** controller (v1) or "" (v2) → this process's path in that hierarchy. */
function ownPaths(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    for (const controller of m[1]!.split(",")) out.set(controller, m[2]!);
  }
  return out;
}

/** The directory of cgroup `path` under `mount`, or null when that mount does not show it. */
function dirIn(mount: Mount, path: string): string | null {
  const root = mount.root === "/" ? "" : mount.root;
  if (path !== root && !path.startsWith(`${root}/`)) return null;
  const dir = mount.point + path.slice(root.length);
  return existsSync(dir) ? dir.replace(/\/$/, "") : null;
}

function ownDir(all: Mount[], fstype: string, controller: string | null, path: string | undefined): string | null {
  if (path === undefined) return null;
  for (const m of all) {
    if (m.fstype !== fstype || (controller !== null && !m.options.includes(controller))) continue;
    const dir = dirIn(m, path);
    if (dir !== null) return dir;
  }
  return null;
}

const parentName = (): string => `tether-${process.pid}`;

// ---- v1

function detectV1(): CgroupSupport {
  const all = mounts();
  const own = ownPaths();
  const dirs: Record<string, string | null> = {};
  for (const c of [...CONTROLLERS, "cpuacct"]) dirs[c] = ownDir(all, "cgroup", c, own.get(c));
  const missing = CONTROLLERS.filter((c) => dirs[c] === null);
  if (missing.length > 0) return none(`cgroup v1: ${missing.join(", ")} not mounted where this process can see its group`);
  // CPU time is a nicety: an unwritable cpuacct hierarchy just means no cpuNanos().
  const cpuacct = dirs.cpuacct !== null && dirs.cpuacct !== undefined && canMakeGroup(dirs.cpuacct) ? dirs.cpuacct : null;
  const roots: V1Roots = { memory: dirs.memory!, pids: dirs.pids!, cpu: dirs.cpu!, cpuacct };
  // A probe group with the limit files written: mode bits, read-only mounts and cgroup namespaces all show here.
  const probe = `probe-${randomSuffix()}`;
  const probeWrites: Array<[string, string, string]> = [
    [roots.memory, "memory.limit_in_bytes", String(64 * 1024 * 1024)],
    [roots.pids, "pids.max", "max"],
    [roots.cpu, "cpu.cfs_quota_us", "-1"],
  ];
  for (const [root, file, value] of probeWrites) {
    const parent = join(root, parentName());
    const hadParent = existsSync(parent);
    try {
      mkdirSync(join(parent, probe), { recursive: true });
      writeFileSync(join(parent, probe, file), value);
    } catch (err) {
      return none(`cgroup v1 at ${root} is not writable here (${code(err)})`);
    } finally {
      tryRmdir(join(parent, probe));
      if (!hadParent) tryRmdir(parent);
    }
  }
  const list = Object.entries(roots)
    .filter(([, d]) => d !== null)
    .map(([c, d]) => `${c} at ${d}`);
  return { kind: "v1", roots, describe: () => `cgroup v1: ${list.join(", ")} (writable)` };
}

function canMakeGroup(root: string): boolean {
  const parent = join(root, parentName());
  const hadParent = existsSync(parent);
  const probe = join(parent, `probe-${randomSuffix()}`);
  try {
    mkdirSync(probe, { recursive: true });
    return true;
  } catch {
    return false;
  } finally {
    tryRmdir(probe);
    if (!hadParent) tryRmdir(parent);
  }
}

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
    if (existsSync(join(memory, "memory.memsw.limit_in_bytes"))) writeFileSync(join(memory, "memory.memsw.limit_in_bytes"), bytes);
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

// ---- v2

function detectV2(): CgroupSupport {
  const all = mounts();
  let own = ownDir(all, "cgroup2", null, ownPaths().get(""));
  if (own === null) return none("no cgroup2 mount shows this process's group");
  // Already moved into our own leaf by an earlier detection in this process.
  if (basename(own) === "broker" && basename(dirname(own)) === parentName()) own = dirname(dirname(own));
  const offered = readText(join(own, "cgroup.controllers")).split(/\s+/);
  const missing = CONTROLLERS.filter((c) => !offered.includes(c));
  if (missing.length > 0) return none(`cgroup v2 at ${own} does not offer ${missing.join(", ")} (bound to v1 hierarchies, or not delegated)`);
  const parent = join(own, parentName());
  const leaf = join(parent, "broker");
  const hadParent = existsSync(parent);
  let moved = false;
  try {
    mkdirSync(leaf, { recursive: true });
    if (!readText(join(leaf, "cgroup.procs")).split("\n").includes(String(process.pid))) {
      writeFileSync(join(leaf, "cgroup.procs"), String(process.pid));
      moved = true;
    }
    enableControllers(own);
    enableControllers(parent);
    const probe = join(parent, `probe-${randomSuffix()}`);
    mkdirSync(probe);
    try {
      writeFileSync(join(probe, "memory.max"), String(64 * 1024 * 1024));
      writeFileSync(join(probe, "pids.max"), "max");
      writeFileSync(join(probe, "cpu.max"), `max ${CFS_PERIOD_US}`);
    } finally {
      tryRmdir(probe);
    }
  } catch (err) {
    if (moved) tryWrite(join(own, "cgroup.procs"), String(process.pid));
    if (!hadParent) {
      tryRmdir(leaf);
      tryRmdir(parent);
    }
    const busy = code(err) === "EBUSY" ? ": other processes share it; delegate a cgroup to the broker alone" : "";
    return none(`cgroup v2 at ${own} is not delegated to this process (${code(err)})${busy}`);
  }
  return { kind: "v2", root: own, describe: () => `cgroup v2: memory, pids, cpu under ${own} (delegated, writable)` };
}

function enableControllers(dir: string): void {
  const on = readText(join(dir, "cgroup.subtree_control")).split(/\s+/);
  const add = CONTROLLERS.filter((c) => !on.includes(c));
  if (add.length > 0) writeFileSync(join(dir, "cgroup.subtree_control"), add.map((c) => `+${c}`).join(" "));
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
    oomKilled: () => keyed(join(dir, "memory.events"), "oom_kill") > 0 || keyed(join(dir, "memory.events"), "oom_group_kill") > 0,
  });
}

// ---- one satellite's group

/**
 * A fresh group for one satellite under `tether-<broker pid>`, or null when the
 * host offers none under `mode` (mode none included) or it could not be made; the
 * RSS watchdog and sized mounts still bound memory then.
 */
export function createSatelliteCgroup(label: string, limits: SatelliteLimits, mode: CgroupMode = "auto"): SatelliteCgroup | null {
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
  let last: { memoryBytes: number; memoryPeakBytes: number | null; cpuNanos: number | null; oomKilled: boolean } | null = null;
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

// ---- killing and removing

/** SIGKILLs every task in the groups, again while new pids appear (a fork racing the first pass). v2: cgroup.kill. */
function killGroups(dirs: readonly string[]): void {
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
async function emptyGroups(dirs: readonly string[]): Promise<void> {
  const deadline = Date.now() + TEARDOWN_MS;
  for (;;) {
    killGroups(dirs);
    if (dirs.every((d) => pidsIn(d).length === 0) || Date.now() > deadline) return;
    await sleep(10);
  }
}

async function rmdirPatiently(dir: string): Promise<void> {
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

/**
 * Removes the `tether-<pid>` groups of brokers that are gone (killed with
 * SIGKILL, they leave their groups behind), killing whatever still runs in
 * them. Returns the directories removed. Never throws.
 */
export async function sweepStaleCgroups(mode: CgroupMode = "auto"): Promise<string[]> {
  const support = detectCgroups(mode);
  const roots = support.kind === "v2" ? [support.root] : support.kind === "v1" ? unique(Object.values(support.roots).filter((d): d is string => d !== null)) : [];
  const removed: string[] = [];
  for (const root of roots) {
    let names: string[] = [];
    try {
      names = readdirSync(root);
    } catch {
      continue;
    }
    for (const name of names) {
      const m = /^tether-(\d+)$/.exec(name);
      if (!m || Number(m[1]) === process.pid || alive(Number(m[1]))) continue;
      const dir = join(root, name);
      const tree = subtree(dir); // children first
      try {
        await emptyGroups(tree);
        for (const d of tree) await rmdirPatiently(d);
      } catch {
        // best effort: the next sweep tries again
      }
      if (!existsSync(dir)) removed.push(dir);
    }
  }
  return removed;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return code(err) === "EPERM"; // exists, someone else's
  }
}

/** `dir` and every group below it, deepest first. */
function subtree(dir: string): string[] {
  const out: string[] = [];
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) out.push(...subtree(join(dir, e.name)));
  } catch {
    // gone
  }
  out.push(dir);
  return out;
}

// ---- small helpers

function quotaUs(cpuQuota: number): number | null {
  return Number.isFinite(cpuQuota) ? Math.max(1000, Math.round(cpuQuota * CFS_PERIOD_US)) : null;
}

function readText(file: string): string {
  return readFileSync(file, "utf8").trim();
}

function readNumber(file: string): number {
  return Number(readText(file));
}

/** The number after `key` in a "key value" per line file (memory.events, cpu.stat, memory.oom_control); 0 when absent. */
function keyed(file: string, key: string): number {
  const m = new RegExp(`^${key} (\\d+)$`, "m").exec(readText(file));
  return m ? Number(m[1]) : 0;
}

function tryWrite(file: string, value: string): boolean {
  try {
    writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

function tryRmdir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not there, or not empty
  }
}

function attempt<T>(f: () => T, fallback: T): T {
  try {
    return f();
  } catch {
    return fallback;
  }
}

function unique(dirs: string[]): string[] {
  return [...new Set(dirs)];
}

function randomSuffix(): string {
  return Math.random().toString(36).slice(2, 10).padEnd(8, "0");
}

function code(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}
