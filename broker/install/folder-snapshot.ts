/**
 * A copy of an extension folder for the jailed jobs that read it (bundling,
 * the type check): taken with `lstat` before a byte is read, so every file
 * and the whole folder are held to documented bounds first (a 2 GB sparse
 * file is refused by its size, not after reading it), and the jobs see one
 * fixed state of the folder (no file swapped between a check and a read).
 * It is owned by the jail's uid, so a root broker's jail reads it without a
 * path to the author's folder.
 *
 * What is copied: directories, regular files, and symbolic links as links
 * (their text unchanged: inside the jail the folder sits at its own real
 * path, so a link within it still works and a link to the host leads
 * nowhere). What cannot be copied faithfully — a hard link (its contents may
 * be any host file), a FIFO, a socket, a device — becomes an empty file with
 * the reason recorded; the bundler refuses it by that reason if it is ever
 * read, as it refused the original. `.git/` at the top is left out.
 */
import { createHash } from "node:crypto";
import {
  chownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  opendirSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  type Stats,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { BrokerCode, TetherError } from "../base/errors.js";
import { copyExactly } from "../jail/copy-exactly.js";
import { jailIdentity, makeSatelliteDir, type JailIdentityOptions } from "../jail/identity.js";

/** The largest file an extension folder may hold. */
export const FOLDER_FILE_BYTES = 32 * 1024 * 1024;
/** All its files together. */
export const FOLDER_TOTAL_BYTES = 256 * 1024 * 1024;
/** Files, folders and links, together. */
export const FOLDER_ENTRIES = 20_000;
/** Folders within folders. */
export const FOLDER_DEPTH = 32;

export interface FolderSnapshot {
  /** The copy on the host (bound read-only into the jail at the folder's real path). */
  readonly dir: string;
  /** Files that could not be copied faithfully, by path in the folder (with /): why each is refused if read. */
  readonly problems: Readonly<Record<string, string>>;
  /**
   * What a job over the copy can see, hashed while copying (sha256, hex): every entry's path,
   * kind and mode, a file's bytes, a link's text, a problem's reason. Equal digests, equal copies.
   */
  readonly digest: string;
  /** Regular files and their sizes: the bounds' measure. */
  readonly files: number;
  readonly bytes: number;
  /** Removes the copy. */
  remove(): void;
}

/** Why a non-regular or multiply-named file is not an extension's source (the bundler's words). */
function problemOf(st: Stats): string | undefined {
  if (st.isFIFO()) return "is a FIFO, not a regular file; replace it with a regular file in the extension folder";
  if (st.isSocket()) return "is a socket, not a regular file; replace it with a regular file in the extension folder";
  if (st.isCharacterDevice() || st.isBlockDevice())
    return "is a device, not a regular file; replace it with a regular file in the extension folder";
  // A hard link's real path is wherever it was linked from: its contents may be any host file.
  if (st.isFile() && st.nlink > 1)
    return `is a hard link (${st.nlink} names); copy the file into the extension folder instead`;
  return undefined;
}

const mib = (n: number) => `${Math.round(n / 2 ** 20)} MiB`;

/**
 * Copies `root` (a real path) into a fresh folder the jail can
 * read; throws an install error naming what is over a bound.
 */
export function snapshotFolder(root: string, identity: JailIdentityOptions = {}): FolderSnapshot {
  const owner = jailIdentity(identity);
  const base = owner === null ? mkdtempSync(join(tmpdir(), "tether-folder-")) : makeSatelliteDir(owner);
  const dir = join(realpathSync(base), "folder");
  const remove = () => rmSync(base, { recursive: true, force: true });
  const problems: Record<string, string> = {};
  const hash = createHash("sha256");
  let entries = 0;
  let files = 0;
  let bytes = 0;
  const shown = (path: string) => relative(root, path).split(sep).join("/") || ".";
  const over = (what: string): never => {
    throw new TetherError(
      BrokerCode.installFailed,
      `${what}; an extension folder holds what its artifact needs (vendor runtime packages only: npm ci --omit=dev)`,
    );
  };
  // First every entry by lstat alone, bounds checked as it goes; only then is anything copied.
  type Entry = { readonly source: string; readonly target: string; readonly st: Stats };
  const plan: Entry[] = [];
  const walk = (from: string, to: string, depth: number): void => {
    if (depth > FOLDER_DEPTH) over(`'${shown(from)}' is more than ${FOLDER_DEPTH} folders deep`);
    for (const name of boundedListing(from, () =>
      over(`the folder holds more than ${FOLDER_ENTRIES} files, folders and links (the limit)`),
    )) {
      if (depth === 0 && name === ".git") continue;
      if (++entries > FOLDER_ENTRIES)
        over(`the folder holds more than ${FOLDER_ENTRIES} files, folders and links (the limit)`);
      const source = join(from, name);
      const target = join(to, name);
      const st = lstatSync(source);
      plan.push({ source, target, st });
      if (st.isDirectory()) walk(source, target, depth + 1);
      else if (st.isFile() && problemOf(st) === undefined) {
        if (st.size > FOLDER_FILE_BYTES)
          over(
            `'${shown(source)}' is ${mib(st.size)}, over the ${mib(FOLDER_FILE_BYTES)} a file of an extension may be`,
          );
        bytes += st.size;
        if (bytes > FOLDER_TOTAL_BYTES)
          over(`the folder's files come to more than ${mib(FOLDER_TOTAL_BYTES)} (the limit), at '${shown(source)}'`);
        files++;
      }
    }
  };
  try {
    walk(root, dir, 0);
    mkdirSync(dir, { mode: 0o755 });
    for (const { source, target, st } of plan) {
      const problem = problemOf(st);
      // Each field ends in a NUL, which no path, link text or reason holds.
      hash.update(`${shown(source)}\0`);
      if (st.isSymbolicLink()) {
        const text = readlinkSync(source);
        symlinkSync(text, target);
        hash.update(`link\0${text}\0`);
      } else if (st.isDirectory()) {
        mkdirSync(target, { mode: 0o755 });
        hash.update("dir\0");
      } else if (problem !== undefined || !st.isFile()) {
        const reason = problem ?? "is not a regular file; replace it with a regular file in the extension folder";
        problems[shown(source)] = reason;
        writeFileSync(target, "", { mode: 0o644 });
        hash.update(`problem\0${reason}\0`);
      } else {
        // The mode written, taken from the descriptor the bytes were read through.
        const { bytes, mode } = copyExactly(source, target, st);
        hash.update(`file\0${mode}\0${bytes.length}\0`).update(bytes);
      }
    }
    if (owner !== null) chownTree(base, owner.uid, owner.gid);
  } catch (err) {
    remove();
    if (err instanceof TetherError) throw err;
    throw new TetherError(
      BrokerCode.installFailed,
      `Cannot read the extension folder ${root}: ${(err as Error).message}`,
    );
  }
  return { dir, problems, digest: hash.digest("hex"), files, bytes, remove };
}

/**
 * A folder's names, sorted, read one entry at a time: a folder
 * of a million names is refused at the limit, not listed whole.
 */
function boundedListing(dir: string, tooMany: () => never): string[] {
  const names: string[] = [];
  const handle = opendirSync(dir);
  try {
    for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
      if (names.push(entry.name) > FOLDER_ENTRIES) tooMany();
    }
  } finally {
    handle.closeSync();
  }
  return names.sort();
}

/** The copy becomes the jail uid's (links included), so its jail reads it whatever the author's modes were. */
function chownTree(path: string, uid: number, gid: number): void {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return;
  chownSync(path, uid, gid);
  if (st.isDirectory()) for (const name of readdirSync(path)) chownTree(join(path, name), uid, gid);
}
