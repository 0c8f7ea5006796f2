/**
 * A memory watchdog for one satellite process tree.
 *
 * `--max-old-space-size` bounds only V8's heap; ArrayBuffers and the jail's
 * tmpfs live outside it. Without a cgroup (which counts both) the broker polls
 * the tree's RSS plus what the jail's tmpfs holds — shared memory no RSS shows —
 * and stops a satellite that passes its bound.
 */
import { readdirSync, readFileSync, statfsSync, statSync } from "node:fs";

/** The pids of `pid` and all its descendants. */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const stack = [pid];
  while (stack.length > 0) {
    const next = stack.pop()!;
    out.push(next);
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${next}/task`);
    } catch {
      continue; // gone
    }
    for (const task of tasks) {
      try {
        for (const child of readFileSync(`/proc/${next}/task/${task}/children`, "utf8").split(" ")) {
          const n = Number(child);
          if (n > 0) stack.push(n);
        }
      } catch {
        // the task ended meanwhile
      }
    }
  }
  return out;
}

/** Resident bytes of `pid`'s whole tree (0 when it is gone). */
export function treeRssBytes(pid: number, tree: readonly number[] = processTree(pid)): number {
  let total = 0;
  for (const p of tree) {
    try {
      const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${p}/status`, "utf8"));
      if (m) total += Number(m[1]) * 1024;
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

/** Bytes the jail's /tmp tmpfs holds, seen through the jail's root (0 with no jail, or when it is gone). */
export function jailTmpBytes(pid: number): number {
  try {
    // Only a jail's own /tmp: a satellite with no OS sandbox shares the host's root (and its /tmp).
    const root = statSync(`/proc/${pid}/root`);
    const ours = statSync("/");
    if (root.dev === ours.dev && root.ino === ours.ino) return 0;
    const st = statfsSync(`/proc/${pid}/root/tmp`);
    return (st.blocks - st.bfree) * st.bsize;
  } catch {
    return 0;
  }
}

/**
 * The RSS bound for a satellite whose heap is bounded at `memoryMb`: the heap, as much again
 * off-heap, and the runtime.
 */
export function rssLimitBytes(memoryMb: number): number {
  return (memoryMb * 2 + 128) * 1024 * 1024;
}

/** Polls `pid`'s tree; calls `onExceeded(rssBytes)` once when it passes `limitBytes`. */
export function watchMemory(
  pid: number,
  limitBytes: number,
  onExceeded: (rssBytes: number) => void,
  everyMs = 250,
): () => void {
  const timer = setInterval(() => {
    const tree = processTree(pid);
    const rss = treeRssBytes(pid, tree) + jailTmpBytes(tree[tree.length - 1] ?? pid);
    if (rss > limitBytes) {
      clearInterval(timer);
      onExceeded(rss);
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
