/**
 * The store's change stamp: a file beside the database (`<store>-changes`)
 * that every registry write touches after it commits. A broker watches it
 * (inotify through fs.watch), so a `tether revoke` in another process is
 * heard when it is made, not found by reading the store on every call. The
 * stamp only says "look": what changed is read from the store itself, and a
 * broker that misses the event (a watch that failed, a writer that bypassed
 * the registry) still finds the change by its bounded fallback reads
 * (kernel/approval-changes.ts).
 */
import { closeSync, openSync, watch, writeFileSync } from "node:fs";
import type { Store } from "./open.js";

/** Where the stamp of the store at `storePath` is; null for a database with no file. */
export function changeStampPath(storePath: string): string | null {
  return storePath === "" || storePath.startsWith(":memory:") || storePath.startsWith("file:")
    ? null
    : `${storePath}-changes`;
}

/**
 * Tells the store's other processes that a change was committed. Never
 * throws: a missed stamp is found by their fallback reads.
 */
export function touchChangeStamp(store: Store): void {
  const path = changeStampPath(store.path);
  if (path === null) return;
  try {
    writeFileSync(path, `${process.pid} ${Date.now()}\n`);
  } catch {
    // A read-only home: the other processes' fallback reads still see the commit.
  }
}

/**
 * Calls `onStamp` whenever another process (or this one) touches the store's
 * stamp; returns the stop. Watching nothing is not an error: the fallback
 * reads still run, only later.
 */
export function watchChangeStamp(store: Store, onStamp: () => void): () => void {
  const path = changeStampPath(store.path);
  if (path === null) return () => {};
  try {
    // The watch is on the file itself (a folder's watch would fire for every WAL write).
    closeSync(openSync(path, "a"));
    const watcher = watch(path, { persistent: false }, () => onStamp());
    watcher.on("error", () => watcher.close());
    return () => watcher.close();
  } catch {
    return () => {};
  }
}
