/**
 * A resident-memory watchdog for one satellite process tree.
 *
 * `--max-old-space-size` bounds only V8's heap; ArrayBuffers and the jail's
 * tmpfs live outside it. Without a delegated cgroup the broker polls the tree's
 * RSS and stops a satellite that passes its bound.
 */
import { readdirSync, readFileSync } from "node:fs";

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
export function treeRssBytes(pid: number): number {
  let total = 0;
  for (const p of processTree(pid)) {
    try {
      const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${p}/status`, "utf8"));
      if (m) total += Number(m[1]) * 1024;
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

/** The RSS bound for a satellite whose heap is bounded at `memoryMb`: the heap, as much again off-heap, and the runtime. */
export function rssLimitBytes(memoryMb: number): number {
  return (memoryMb * 2 + 128) * 1024 * 1024;
}

/** Polls `pid`'s tree; calls `onExceeded(rssBytes)` once when it passes `limitBytes`. */
export function watchMemory(pid: number, limitBytes: number, onExceeded: (rssBytes: number) => void, everyMs = 250): () => void {
  const timer = setInterval(() => {
    const rss = treeRssBytes(pid);
    if (rss > limitBytes) {
      clearInterval(timer);
      onExceeded(rss);
    }
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
