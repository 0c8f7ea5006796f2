/**
 * Bundles already made, kept per user and found by everything the bundling
 * jail could see: the same folder bytes, SDK, esbuild, Node, job script and
 * request give the same artifact, so `tether check` then `tether install` of
 * one folder (or a second home installing it) bundles once. Only a jailed
 * job's successful answer is kept: with no OS sandbox the job reads the
 * folder itself, not the snapshot the key describes, and a failure is always
 * run again (its message may depend on the machine's state: memory, time).
 *
 * Where: the folder the broker is told (`bundleCache`; false: none), else
 * `~/.cache/tether/bundles`; the `tether` command tells it `$TETHER_BUNDLE_CACHE`
 * (`off`: none) or `$XDG_CACHE_HOME/tether/bundles`. A kept
 * answer is as trusted as the user's own files: read only from a folder and
 * file this user owns that nobody else may write (kept-file.ts), and checked
 * for shape; anything else is a miss and the job runs. Bounded: the least
 * recently used go first past MAX_ENTRIES or MAX_BYTES.
 */
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  utimesSync,
  writeFileSync,
  type Stats,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve, sep } from "node:path";
import * as v from "valibot";
import { orNull } from "../base/or-null.js";
import { readKept, writeKept } from "../jail/kept-file.js";

/** The most kept bundles, and the most bytes they may take together. */
export const MAX_ENTRIES = 256;
export const MAX_BYTES = 128 * 2 ** 20;

/** A bundling job's successful answer: the artifact and the folder's files it was built from. */
export const BundleOutput = v.object({ ok: v.literal(true), code: v.string(), sources: v.array(v.string()) });
export type KeptAnswer = v.InferOutput<typeof BundleOutput>;
/** A kept answer, with the key it was kept under. */
const Kept = v.object({ key: v.string(), answer: BundleOutput });

/** The bundles' folder under an XDG cache folder (`$XDG_CACHE_HOME`). */
export const xdgBundleCache = (cacheHome: string): string => join(cacheHome, "tether", "bundles");

/** The cache folder's tag (the Cache Directory Tagging convention: backup tools skip it). */
const TAG_NAME = "CACHEDIR.TAG";
const TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# Bundles kept by tether (broker/install/bundle-cache.ts).\n";

/**
 * The cache's folder — the one `told` names (false: none), else `~/.cache/tether/bundles` —
 * or null when it cannot be trusted. Only a plain absolute path (no `.` or `..` part, `//`
 * or trailing `/`: each can lead elsewhere than it reads); every link on the way this
 * user's or root's, every folder on its real path theirs and writable by nobody else (a
 * root-owned sticky folder such as /tmp excepted: nobody can swap another's entry there);
 * missing folders made one at a time, 0700, each checked before the next; the folder
 * itself no link, this user's, open to nobody else — never changed to be — and tagged as
 * the cache's (an empty folder is tagged; one holding anything else is not the cache's).
 * So a root broker run with another user's HOME keeps nothing there, and no planted link
 * or misnamed path leads it to change, fill or trim a folder that is not the cache's.
 */
export function openBundleCache(told: string | false | undefined, home = homedir()): string | null {
  if (told === false) return null;
  const dir = told ?? xdgBundleCache(join(home, ".cache"));
  if (!isAbsolute(dir) || resolve(dir) !== dir) return null;
  try {
    const me = process.geteuid?.() ?? -1;
    if (!safePath(dir, me)) return null;
    makeMissing(dir, me);
    if (!safePath(dir, me)) return null;
    const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      const st = fstatSync(fd);
      if (st.uid !== me || (st.mode & 0o7077) !== 0) return null;
    } finally {
      closeSync(fd);
    }
    return tagged(dir, me) ? dir : null;
  } catch {
    return null;
  }
}

/** Makes the missing folders of `dir` one at a time (0700), each a folder of this user's, no link, before the next. */
function makeMissing(dir: string, me: number): void {
  const missing: string[] = [];
  for (let at = dir; lstatOrNull(at) === null; at = dirname(at)) missing.unshift(at);
  for (const folder of missing) {
    mkdirSync(folder, { mode: 0o700 });
    const st = lstatSync(folder);
    if (!st.isDirectory() || st.uid !== me) throw new Error(`${folder} is not a folder of this user's`);
  }
}

/** Whether `dir` is the cache's: its tag this user's file, or the folder empty and now tagged. */
function tagged(dir: string, me: number): boolean {
  const tag = join(dir, TAG_NAME);
  const isOurs = (st: Stats | null) => st?.isFile() === true && st.uid === me;
  const found = lstatOrNull(tag);
  if (found !== null) return isOurs(found);
  if (readdirSync(dir).length > 0) return false;
  try {
    writeFileSync(tag, TAG, { mode: 0o600, flag: "wx" });
  } catch {
    // another broker tagged it meanwhile
  }
  return isOurs(lstatOrNull(tag));
}

/** Whether nobody but this user (`me`) and root can change what `path` leads to. */
function safePath(path: string, me: number): boolean {
  const trusted = (st: Stats) => st.uid === 0 || st.uid === me;
  // Each link on the way as written (its own owner: a link in /tmp may be anyone's)...
  const parts = path.split(sep).filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    const st = lstatOrNull(sep + parts.slice(0, i).join(sep));
    if (st === null) break;
    if (st.isSymbolicLink() && !trusted(st)) return false;
  }
  // ...then each folder on the real path (as the kernel resolves it) to the deepest that exists.
  let real = path;
  while (lstatOrNull(real) === null) real = dirname(real);
  const folders = realpathSync.native(real).split(sep).filter(Boolean);
  for (let i = 0; i <= folders.length; i++) {
    const st = lstatSync(sep + folders.slice(0, i).join(sep));
    const closed = (st.mode & 0o022) === 0 || ((st.mode & 0o1000) !== 0 && st.uid === 0);
    if (!st.isDirectory() || !trusted(st) || !closed) return false;
  }
  return true;
}

const lstatOrNull = (path: string): Stats | null => orNull(() => lstatSync(path));

/** Every entry under each of `dirs` by path, kind, size, mode, inode and change times: what would show an edit. */
export function treeStamp(dirs: readonly string[]): string {
  const hash = createHash("sha256");
  const visit = (path: string, st: Stats): void => {
    hash.update(`${path}\0${st.mode}\0${st.size}\0${st.ino}\0${st.mtimeMs}\0${st.ctimeMs}\0`);
    if (st.isSymbolicLink()) hash.update(`${readlinkSync(path)}\0`);
    else if (st.isDirectory()) {
      for (const name of readdirSync(path).sort()) visit(join(path, name), lstatSync(join(path, name)));
    }
  };
  for (const dir of dirs) visit(dir, lstatSync(dir));
  return hash.digest("hex");
}

/** The key of one bundling job: sha256 over everything given (each part a string or plain data). */
export function bundleKey(parts: Readonly<Record<string, unknown>>): string {
  return createHash("sha256")
    .update(JSON.stringify({ v: 1, ...parts }))
    .digest("hex");
}

const fileOf = (dir: string, key: string) => join(dir, `${key}.json`);

/** The answer kept under `key`, or null (none, not trusted, not the right shape). A hit counts as a use. */
export function keptBundle(dir: string, key: string): KeptAnswer | null {
  const file = fileOf(dir, key);
  const text = readKept(file, MAX_BYTES);
  if (text === null) return null;
  try {
    const kept = v.parse(Kept, JSON.parse(text));
    if (kept.key !== key) return null;
    markUsed(file);
    return kept.answer;
  } catch {
    return null;
  }
}

/** The trim keeps what was used last. */
function markUsed(file: string): void {
  try {
    const now = new Date();
    utimesSync(file, now, now);
  } catch {
    // root's file read by its owner's peer: used, just not marked
  }
}

/**
 * Keeps `answer` under `key` in `dir` (from openBundleCache; best effort: a folder that
 * cannot be written keeps nothing), then trims the cache.
 */
export function keepBundle(dir: string, key: string, answer: KeptAnswer): void {
  writeKept(fileOf(dir, key), JSON.stringify({ key, answer }));
  trim(dir);
}

/** A scratch file this old was left by a broker that died while writing it. */
const SCRATCH_LEFT_MS = 10 * 60_000;

/**
 * Removes scratch files left behind, then the least recently used kept answers until at
 * most MAX_ENTRIES and MAX_BYTES are left (scratch files still being written count too).
 */
function trim(dir: string): void {
  let entries: Array<{ file: string; used: number; bytes: number }>;
  let scratchBytes = 0;
  try {
    entries = readdirSync(dir).flatMap((name) => {
      const file = join(dir, name);
      try {
        const st = lstatSync(file);
        if (/^[0-9a-f]{64}\.json$/.test(name)) return [{ file, used: st.mtimeMs, bytes: st.size }];
        if (/^[0-9a-f]{64}\.json\.[0-9a-f]{16}\.tmp$/.test(name)) {
          if (Date.now() - st.mtimeMs > SCRATCH_LEFT_MS) removeQuietly(file);
          else scratchBytes += st.size;
        }
      } catch {
        // removed by another broker meanwhile
      }
      return [];
    });
  } catch {
    return;
  }
  let bytes = scratchBytes + entries.reduce((sum, e) => sum + e.bytes, 0);
  entries.sort((a, b) => a.used - b.used);
  for (let i = 0; i < entries.length && (entries.length - i > MAX_ENTRIES || bytes > MAX_BYTES); i++) {
    removeQuietly(entries[i]!.file);
    bytes -= entries[i]!.bytes;
  }
}

/** A kept file removed, or left when it cannot be (a read-only folder): trimming never fails a bundle. */
function removeQuietly(file: string): void {
  try {
    rmSync(file, { force: true });
  } catch {
    // left for the next trim
  }
}
