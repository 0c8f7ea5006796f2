/**
 * Sweeping the groups that brokers killed with SIGKILL left behind.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { detectCgroups, type CgroupMode } from "./cgroup-detect.js";
import { unique } from "./cgroup-fs.js";
import { emptyGroups, rmdirPatiently } from "./cgroup-teardown.js";
import { alive } from "./identity.js";

/**
 * Removes the `tether-<pid>` groups of brokers that are gone (killed with
 * SIGKILL, they leave their groups behind), killing whatever still runs in
 * them. Returns the directories removed. Never throws.
 */
export async function sweepStaleCgroups(mode: CgroupMode = "auto"): Promise<string[]> {
  const support = detectCgroups(mode);
  const roots =
    support.kind === "v2"
      ? [support.root]
      : support.kind === "v1"
        ? unique(Object.values(support.roots).filter((d): d is string => d !== null))
        : [];
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

/** `dir` and every group below it, deepest first. */
function subtree(dir: string): string[] {
  const out: string[] = [];
  try {
    for (const e of readdirSync(dir, { withFileTypes: true }))
      if (e.isDirectory()) out.push(...subtree(join(dir, e.name)));
  } catch {
    // gone
  }
  out.push(dir);
  return out;
}
