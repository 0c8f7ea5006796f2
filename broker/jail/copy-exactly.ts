/**
 * Copying a file a jail or an author could change meanwhile, without ever
 * following what it was changed into (folder-snapshot.ts, deno-cache.ts).
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync, writeFileSync, type Stats } from "node:fs";
import { readAtMost } from "../base/read-at-most.js";

/**
 * Copies the regular file `source` as it was when `seen` was taken, or throws: opened
 * without following a link or blocking on a FIFO, and checked on its descriptor — the
 * same file (device and inode), still one name, its real path still `source` (no folder
 * on the way was swapped for a link since the walk), at most the size seen. Returns the
 * bytes and the mode written.
 */
export function copyExactly(source: string, target: string, seen: Stats): { bytes: Buffer; mode: number } {
  const changed = (): never => {
    throw new Error(`'${source}' changed while it was copied; try again when nothing is writing to it`);
  };
  let fd: number;
  try {
    fd = openSync(source, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return changed();
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.dev !== seen.dev || st.ino !== seen.ino || st.nlink !== 1 || st.size > seen.size) changed();
    if (readlinkSync(`/proc/self/fd/${fd}`) !== source) changed();
    const copied = readAtMost(fd, seen.size);
    // A new file (never one planted at the target), its mode read back as made (the umask applied).
    const out = openSync(target, "wx", st.mode & 0o777);
    try {
      writeFileSync(out, copied);
      return { bytes: copied, mode: fstatSync(out).mode & 0o777 };
    } finally {
      closeSync(out);
    }
  } finally {
    closeSync(fd);
  }
}
