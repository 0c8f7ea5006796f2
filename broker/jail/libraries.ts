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
import {
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  type Stats,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
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

/** sharedLibraries without this process's memory: the kept list if it holds, else ldd's (kept when complete). */
export function librariesOf(binary: string, keepDir?: string): readonly string[] {
  const kept = keepDir !== undefined ? keptFile(binary, keepDir) : null;
  const hit = kept !== null ? readKept(kept) : null;
  if (hit !== null) return hit;
  const { list, complete } = readLdd(binary);
  if (kept !== null && complete) writeKept(kept, list);
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

/** Owned by this user or root, and writable by nobody else. */
function ownAndClosed(st: Stats): boolean {
  const owner = st.uid === 0 || st.uid === process.geteuid?.();
  return owner && (st.mode & 0o022) === 0;
}

/** A shared library's name: `libc.so.6`, `ld-linux-x86-64.so.2`, `libfoo.so`. */
const LIBRARY_NAME = /\.so(\.[0-9]+)*$/;

/** The kept list, if there is one that can be trusted and every library it names is still a library file. */
function readKept(file: string): readonly string[] | null {
  try {
    const st = statSync(file);
    if (!ownAndClosed(statSync(dirname(file))) || !ownAndClosed(st) || !st.isFile()) return null;
    const text = readFileSync(file, "utf8");
    if (text.length > KEPT_BYTES) return null;
    const parsed = v.safeParse(KeptList, JSON.parse(text));
    if (!parsed.success || parsed.output.length === 0) return null;
    for (const path of parsed.output) if (!LIBRARY_NAME.test(basename(path)) || !statSync(path).isFile()) return null;
    return parsed.output;
  } catch {
    return null;
  }
}

/**
 * Written under a temporary name of its own (never through one planted there) and renamed: a
 * reader sees the whole list or none. A folder this broker cannot write (an installed
 * package's, read-only) keeps nothing: ldd next time.
 */
function writeKept(file: string, list: readonly string[]): void {
  try {
    mkdirSync(dirname(file), { recursive: true });
  } catch {
    return;
  }
  const scratch = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(scratch, JSON.stringify(list), { mode: 0o644, flag: "wx" });
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
