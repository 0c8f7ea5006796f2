/**
 * SQLite files other than the store (Deno's caches), made to stand alone:
 * every SQLite connection the broker opens is opened in `broker/store/`.
 */
import Database from "better-sqlite3";
import { sqliteAddonOption } from "./sqlite-addon.js";

/**
 * Folds the WAL of the SQLite file at `path` back into it and switches it to
 * rollback journaling, so the file by itself holds everything. The file may
 * hold what a jail wrote: this runs in a database jail (deno-cache.ts).
 */
export function foldWal(path: string): void {
  const db = new Database(path, sqliteAddonOption());
  try {
    db.pragma("wal_checkpoint(TRUNCATE)");
    db.pragma("journal_mode = DELETE");
  } finally {
    db.close();
  }
}
