/**
 * The shared libraries a binary loads, read from `ldd`, so the sandbox can
 * show exactly those files and nothing else of the host.
 *
 * `ldd` is a shell script that runs the loader three times: 30–50 ms, blocking,
 * on each broker process's first satellite. A complete list (ldd succeeded and
 * found every library) is therefore also kept in the folder of the compiled
 * jail programs, keyed by the binary's path and identity (device, inode, size,
 * times) and the loader's environment. It is read again only from a file and
 * folder this user (or root) owns and nobody else may write — as trusted as the
 * launcher beside it, which runs as root — and only while every entry is still
 * a shared library's file (`*.so*`), never a folder or another file of the host.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { realpathSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import * as v from "valibot";
import { readKept, writeKept } from "./kept-file.js";

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

/** sharedLibraries without this process's memory: the kept list if it holds, else ldd's (kept when complete). */
export function librariesOf(binary: string, keepDir?: string): readonly string[] {
  const kept = keepDir !== undefined ? keptFile(binary, keepDir) : null;
  const hit = kept !== null ? readKeptList(kept) : null;
  if (hit !== null) return hit;
  const { list, complete } = readLdd(binary);
  if (kept !== null && complete) writeKept(kept, JSON.stringify(list));
  return list;
}

/** ldd's list; `complete` when ldd ran, succeeded and found every library (a list worth keeping). */
function readLdd(binary: string): { list: readonly string[]; complete: boolean } {
  let out = "";
  let ran = true;
  try {
    out = execFileSync("ldd", [binary], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    // A static binary (or no ldd): nothing to bind, and nothing kept.
    ran = false;
  }
  const paths = new Set<string>();
  for (const line of out.split("\n")) {
    const arrow = /=>\s+(\/\S+)/.exec(line);
    const bare = /^\s*(\/\S+)\s+\(/.exec(line);
    const path = arrow?.[1] ?? bare?.[1];
    if (path !== undefined) paths.add(path);
  }
  const list = [...paths];
  return { list, complete: ran && list.length > 0 && !/\bnot found\b/.test(out) };
}

/** The kept list's file for this binary as it is now; null when the binary cannot be read. */
function keptFile(binary: string, dir: string): string | null {
  try {
    const st = statSync(binary, { bigint: true });
    // What the loader is told changes what ldd finds.
    const loaderEnv = [process.env["LD_LIBRARY_PATH"] ?? "", process.env["LD_PRELOAD"] ?? ""];
    const identity = [realpathSync(binary), st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs, ...loaderEnv].join("\0");
    return join(dir, `libraries-${createHash("sha256").update(identity).digest("hex").slice(0, 16)}.json`);
  } catch {
    return null;
  }
}

/** A shared library's name: `libc.so.6`, `ld-linux-x86-64.so.2`, `libfoo.so`. */
const LIBRARY_NAME = /\.so(\.[0-9]+)*$/;

/** The kept list, if there is one that can be trusted and every library it names is still a library file. */
function readKeptList(file: string): readonly string[] | null {
  const text = readKept(file, KEPT_BYTES);
  if (text === null) return null;
  try {
    const parsed = v.safeParse(KeptList, JSON.parse(text));
    if (!parsed.success || parsed.output.length === 0) return null;
    for (const path of parsed.output) if (!LIBRARY_NAME.test(basename(path)) || !statSync(path).isFile()) return null;
    return parsed.output;
  } catch {
    return null;
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
