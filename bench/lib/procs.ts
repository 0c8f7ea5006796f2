/** Finding a satellite's Deno process and reading its memory from /proc. */
import { readFileSync, readdirSync } from "node:fs";
import { processTree } from "../../broker/satellite/memory-watch.js";

function read(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** Direct children of `pid`: /proc/<pid>/task/<tid>/children when the kernel has it, else a /proc scan. */
export function childrenOf(pid: number): number[] {
  const tasks = (() => {
    try {
      return readdirSync(`/proc/${pid}/task`);
    } catch {
      return [];
    }
  })();
  const out = new Set<number>();
  let haveChildrenFile = false;
  for (const tid of tasks) {
    const text = read(`/proc/${pid}/task/${tid}/children`);
    if (text === null) continue;
    haveChildrenFile = true;
    for (const c of text.trim().split(/\s+/)) if (c) out.add(Number(c));
  }
  if (haveChildrenFile) return [...out];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    if (parentOf(Number(entry)) === pid) out.add(Number(entry));
  }
  return [...out];
}

/** The parent pid of `pid`, or 0 when it is gone. */
export function parentOf(pid: number): number {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === null) return 0;
  // Fields after the last ')' (the command name may hold spaces or parens): state ppid ...
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

export function comm(pid: number): string {
  return (read(`/proc/${pid}/comm`) ?? "").trim();
}

/** `pid` and all its descendants (the broker's own walk, which its memory watchdog uses). */
export const descendants = processTree;

/** The Deno process at or under `pid` (under bwrap, `pid` is bwrap's and Deno is a grandchild). */
export function findDeno(pid: number): number | null {
  return descendants(pid).find((p) => comm(p) === "deno") ?? null;
}

/** VmRSS of `pid` in KiB, or NaN when the process is gone. */
export function rssKiB(pid: number): number {
  return statusKiB(pid, "VmRSS");
}

/** A kB field of /proc/<pid>/status (VmRSS, RssAnon, RssFile, ...), or NaN. */
export function statusKiB(pid: number, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(read(`/proc/${pid}/status`) ?? "");
  return m ? Number(m[1]) : Number.NaN;
}

/** `count` summed over every thread of `pid` (each thread's /proc/<pid>/task/<tid> folder), or NaN when it is gone. */
function overThreads(pid: number, count: (taskDir: string) => number): number {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return Number.NaN;
  }
  let total = 0;
  for (const tid of tids) total += count(`/proc/${pid}/task/${tid}`);
  return total;
}

/** CPU time used so far by all threads of `pid`, in ns (from /proc/<pid>/task/<tid>/schedstat). */
export function cpuNs(pid: number): number {
  return overThreads(pid, (dir) => Number(read(`${dir}/schedstat`)?.split(" ")[0] ?? 0));
}

/**
 * Times all threads of `pid` went to sleep so far (voluntary context switches,
 * /proc/<pid>/task/<tid>/status): each is a wake-up someone paid for.
 */
export function sleeps(pid: number): number {
  return overThreads(pid, (dir) =>
    Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(read(`${dir}/status`) ?? "")?.[1] ?? 0),
  );
}

/** A kB field of /proc/<pid>/smaps_rollup (Pss, Private_Clean, Private_Dirty, ...), or NaN. */
export function smapsKiB(pid: number, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(read(`/proc/${pid}/smaps_rollup`) ?? "");
  return m ? Number(m[1]) : Number.NaN;
}

/** Memory only `pid` holds (Private_Clean + Private_Dirty), in KiB: what the process costs beyond shared pages. */
export function privateKiB(pid: number): number {
  return smapsKiB(pid, "Private_Clean") + smapsKiB(pid, "Private_Dirty");
}

/** Resident memory of a set of processes: RSS summed (shared pages counted in each), PSS summed (shared pages split) and private pages, in KiB. */
export function memoryOf(pids: readonly number[]): { rss: number; pss: number; private: number } {
  let rss = 0;
  let pss = 0;
  let own = 0;
  for (const pid of pids) {
    const r = rssKiB(pid);
    if (!Number.isFinite(r)) continue; // gone meanwhile
    rss += r;
    pss += smapsKiB(pid, "Pss") || 0;
    own += privateKiB(pid) || 0;
  }
  return { rss, pss, private: own };
}
