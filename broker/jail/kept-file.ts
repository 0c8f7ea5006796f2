/**
 * Files the broker keeps beside its compiled jail programs (build/native and
 * build/jobs) to skip work on the next start: the library list of a binary, a
 * job script's recipe. They are read back only from a regular file and folder
 * this user (or root) owns and nobody else may write — as trusted as the
 * launcher beside them, which runs as root — and written under a temporary
 * name of their own, then renamed, so a reader sees a whole file or none.
 */
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  type Stats,
  writeFileSync,
} from "node:fs";
import { readAtMost } from "../base/read-at-most.js";
import { dirname } from "node:path";

/** Owned by this user or root, and writable by nobody else. */
export function ownAndClosed(st: Stats): boolean {
  const owner = st.uid === 0 || st.uid === process.geteuid?.();
  return owner && (st.mode & 0o022) === 0;
}

/**
 * The text of a kept file, or null when there is none that can be trusted or it is larger
 * than `maxBytes`. Opened without following a link or blocking on a FIFO, and judged and
 * read through that one descriptor (nothing swapped in between).
 */
export function readKept(file: string, maxBytes: number): string | null {
  let fd: number;
  try {
    if (!ownAndClosed(statSync(dirname(file)))) return null;
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!ownAndClosed(st) || !st.isFile() || st.size > maxBytes) return null;
    return readAtMost(fd, st.size).toString("utf8");
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * Keeps `text` at `file`, written under a fresh temporary name of its own (never through
 * one planted there) and renamed. A folder this broker cannot write (an installed package's,
 * read-only) keeps nothing: the work is done again next time.
 */
export function writeKept(file: string, text: string | Uint8Array): void {
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
  } catch {
    return;
  }
  // A name no other process (another pid namespace's same pid included) is writing.
  const scratch = `${file}.${randomBytes(8).toString("hex")}.tmp`;
  try {
    writeFileSync(scratch, text, { mode: 0o644, flag: "wx" });
  } catch (err) {
    // Created and then not written whole (a full disk): ours to remove. Not created: nothing of ours.
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") rmSync(scratch, { force: true });
    return;
  }
  try {
    renameSync(scratch, file);
  } catch {
    rmSync(scratch, { force: true });
  }
}
