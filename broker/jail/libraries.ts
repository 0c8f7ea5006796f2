/**
 * The shared libraries a binary loads, read from `ldd`, so the sandbox can
 * show exactly those files and nothing else of the host.
 *
 * `ldd` is a shell script that runs the loader three times: 30–50 ms, blocking,
 * on each broker process's first satellite. The list is therefore also kept in
 * the folder of the compiled jail programs (as trusted as they are: the launcher
 * there runs as root), keyed by the binary's path and identity (device, inode,
 * size, times), and read again only while every library it names still exists.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import * as v from "valibot";

const cache = new Map<string, readonly string[]>();

/** A kept list: absolute paths, as many as any binary links (a few dozen at most). */
const KeptList = v.pipe(v.array(v.pipe(v.string(), v.startsWith("/"), v.maxLength(4096))), v.maxLength(256));
const KEPT_BYTES = 64 * 1024;

/**
 * Absolute paths of the libraries `binary` links, plus the dynamic loader; kept in `keepDir`
 * (the jail's native folder) when given.
 */
export function sharedLibraries(binary: string, keepDir?: string): readonly string[] {
  const hit = cache.get(binary);
  if (hit !== undefined) return hit;
  const list = librariesOf(binary, keepDir);
  cache.set(binary, list);
  return list;
}

/** sharedLibraries without this process's memory: the kept list if it holds, else ldd's (then kept). */
export function librariesOf(binary: string, keepDir?: string): readonly string[] {
  const kept = keepDir !== undefined ? keptFile(binary, keepDir) : null;
  let list = kept !== null ? readKept(kept) : null;
  if (list === null) {
    list = readLdd(binary);
    if (kept !== null) writeKept(kept, list);
  }
  return list;
}

function readLdd(binary: string): readonly string[] {
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
  return [...paths];
}

/** The kept list's file for this binary as it is now; null when the binary cannot be read. */
function keptFile(binary: string, dir: string): string | null {
  try {
    const st = statSync(binary, { bigint: true });
    const identity = [realpathSync(binary), st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join("\0");
    return join(dir, `libraries-${createHash("sha256").update(identity).digest("hex").slice(0, 16)}.json`);
  } catch {
    return null;
  }
}

/** The kept list, if there is one, it is well-formed and every library it names is still there. */
function readKept(file: string): readonly string[] | null {
  try {
    const text = readFileSync(file, "utf8");
    if (text.length > KEPT_BYTES) return null;
    const parsed = v.safeParse(KeptList, JSON.parse(text));
    if (!parsed.success) return null;
    for (const path of parsed.output) statSync(path);
    return parsed.output;
  } catch {
    return null;
  }
}

/**
 * Written under a temporary name and renamed: a reader sees the whole list or none. A folder
 * this broker cannot write (an installed package's, read-only) keeps nothing: ldd next time.
 */
function writeKept(file: string, list: readonly string[]): void {
  try {
    mkdirSync(dirname(file), { recursive: true });
  } catch {
    return;
  }
  const scratch = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(scratch, JSON.stringify(list), { mode: 0o644 });
    renameSync(scratch, file);
  } catch {
    rmSync(scratch, { force: true });
  }
}

/** The path a library really lives at (ldd reports it through /lib symlinks). */
export function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
