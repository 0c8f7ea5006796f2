/**
 * Which cgroups the host offers this process (v2, v1 or none), found by making
 * a probe group with the limit files written; once per mode per process.
 *
 * On v2 the first detection moves the broker itself to `tether-<pid>/broker`
 * (a cgroup that hands controllers to children may hold no process).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { code, parentName, randomSuffix, readText, tryRmdir, tryWrite } from "./cgroup-fs.js";
import { CFS_PERIOD_US } from "./cgroup-limits.js";

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

const CONTROLLERS = ["memory", "pids", "cpu"] as const;
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

/**
 * Which cgroups the host offers this process under `mode` (default
 * auto), tested by making a probe group; cached per mode. Never throws.
 */
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
    out.push({
      root: unescapeMount(f[3]),
      point: unescapeMount(f[4]),
      fstype,
      options: (superOptions ?? "").split(","),
    });
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

// ---- v1

function detectV1(): CgroupSupport {
  const all = mounts();
  const own = ownPaths();
  const dirs: Record<string, string | null> = {};
  for (const c of [...CONTROLLERS, "cpuacct"]) dirs[c] = ownDir(all, "cgroup", c, own.get(c));
  const missing = CONTROLLERS.filter((c) => dirs[c] === null);
  if (missing.length > 0)
    return none(`cgroup v1: ${missing.join(", ")} not mounted where this process can see its group`);
  // CPU time is a nicety: an unwritable cpuacct hierarchy just means no cpuNanos().
  const cpuacct =
    dirs.cpuacct !== null && dirs.cpuacct !== undefined && canMakeGroup(dirs.cpuacct) ? dirs.cpuacct : null;
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

// ---- v2

function detectV2(): CgroupSupport {
  const all = mounts();
  let own = ownDir(all, "cgroup2", null, ownPaths().get(""));
  if (own === null) return none("no cgroup2 mount shows this process's group");
  // Already moved into our own leaf by an earlier detection in this process.
  if (basename(own) === "broker" && basename(dirname(own)) === parentName()) own = dirname(dirname(own));
  const offered = readText(join(own, "cgroup.controllers")).split(/\s+/);
  const missing = CONTROLLERS.filter((c) => !offered.includes(c));
  if (missing.length > 0)
    return none(`cgroup v2 at ${own} does not offer ${missing.join(", ")} (bound to v1 hierarchies, or not delegated)`);
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
