/**
 * What an extension has stored: its `kv` keys, its `skv` keys in every
 * session, and its `[storage]` database file. An uninstall leaves it (a
 * reinstall or an upgrade finds it again) and says what it left; `--purge`
 * removes it.
 */
import { rmSync } from "node:fs";
import { dbFile, dbSize } from "./ext-db.js";
import type { Store } from "./open.js";

export interface ExtensionData {
  readonly kv: { readonly keys: number; readonly bytes: number };
  readonly skv: { readonly keys: number; readonly bytes: number; readonly sessions: number };
  /** The database file, or null when there is none. */
  readonly db: { readonly file: string; readonly bytes: number } | null;
}

const SIZE = "coalesce(sum(length(value) + length(cast(key as blob))), 0)";

export function extensionData(store: Store, home: string, extension: string): ExtensionData {
  const kv = store.sqlite
    .prepare(`select count(*) as keys, ${SIZE} as bytes from kv where extension = ?`)
    .get(extension) as { keys: number; bytes: number };
  const skv = store.sqlite
    .prepare(
      `select count(*) as keys, ${SIZE} as bytes, count(distinct ` +
        `session_id) as sessions from session_kv where extension = ?`,
    )
    .get(extension) as { keys: number; bytes: number; sessions: number };
  const bytes = dbSize(home, extension);
  return { kv, skv, db: bytes === null ? null : { file: dbFile(home, extension), bytes } };
}

export const holdsData = (d: ExtensionData): boolean => d.kv.keys > 0 || d.skv.keys > 0 || d.db !== null;

/** One line per kind of data held, for the operator. */
export function describeData(d: ExtensionData): string[] {
  const lines: string[] = [];
  if (d.kv.keys > 0) lines.push(`kv: ${d.kv.keys} keys, ${d.kv.bytes} bytes`);
  if (d.skv.keys > 0) lines.push(`skv: ${d.skv.keys} keys, ${d.skv.bytes} bytes in ${d.skv.sessions} sessions`);
  if (d.db !== null) lines.push(`db: ${d.db.file}, ${d.db.bytes} bytes`);
  return lines;
}

/** Removes all of it: the keys in one transaction, then the database file and SQLite's side files. */
export function purgeExtensionData(store: Store, home: string, extension: string): void {
  store.sqlite.transaction(() => {
    store.sqlite.prepare("delete from kv where extension = ?").run(extension);
    store.sqlite.prepare("delete from session_kv where extension = ?").run(extension);
    // The database goes, so the record of what was applied to it goes too.
    store.sqlite.prepare("delete from extension_migrations where extension = ?").run(extension);
    // What it initialized is gone with it: a reinstall runs its initializer again.
    store.sqlite.prepare("delete from extension_inits where extension = ?").run(extension);
  })();
  const file = dbFile(home, extension);
  for (const suffix of ["", "-journal", "-wal", "-shm"]) rmSync(file + suffix, { force: true });
}
