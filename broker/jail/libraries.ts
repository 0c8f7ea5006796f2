/**
 * The shared libraries a binary loads, read once from `ldd`, so the sandbox
 * can show exactly those files and nothing else of the host.
 */
import { execFileSync } from "node:child_process";
import { realpathSync } from "node:fs";

const cache = new Map<string, readonly string[]>();

/** Absolute paths of the libraries `binary` links, plus the dynamic loader. */
export function sharedLibraries(binary: string): readonly string[] {
  const hit = cache.get(binary);
  if (hit !== undefined) return hit;
  let out = "";
  try {
    out = execFileSync("ldd", [binary], { encoding: "utf8" });
  } catch {
    // A static binary (or no ldd): nothing to bind.
  }
  const paths = new Set<string>();
  for (const line of out.split("\n")) {
    const arrow = /=>\s+(\/\S+)/.exec(line);
    const bare = /^\s*(\/\S+)\s+\(/.exec(line);
    const path = arrow?.[1] ?? bare?.[1];
    if (path !== undefined) paths.add(path);
  }
  const list = [...paths];
  cache.set(binary, list);
  return list;
}

/** The path a library really lives at (ldd reports it through /lib symlinks). */
export function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
