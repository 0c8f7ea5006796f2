/**
 * Opens the store: SQLite in WAL mode through better-sqlite3, with drizzle's
 * migrations from drizzle/ applied at open.
 */
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { drizzle, type BetterSQLite3Database } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import * as schema from "./schema.js";

export type Orm = BetterSQLite3Database<typeof schema>;

export interface Store {
  readonly orm: Orm;
  readonly sqlite: Database.Database;
  readonly path: string;
  close(): void;
}

const HERE = dirname(fileURLToPath(import.meta.url));

/** The migrations folder shipped with the broker. */
export function migrationsFolder(): string {
  for (const candidate of [resolve(HERE, "../../drizzle"), resolve(HERE, "../../../drizzle")]) {
    if (existsSync(resolve(candidate, "meta/_journal.json"))) return candidate;
  }
  throw new Error("Cannot find the drizzle/ migrations folder beside the broker");
}

export function openStore(path: string, options: { migrations?: string } = {}): Store {
  const sqlite = new Database(path);
  sqlite.pragma("journal_mode = WAL");
  // NORMAL is durable across a process crash in WAL mode (only power loss can lose the last commits).
  sqlite.pragma("synchronous = NORMAL");
  sqlite.pragma("busy_timeout = 5000");
  sqlite.pragma("foreign_keys = ON");
  const orm = drizzle(sqlite, { schema });
  // drizzle reads which migrations are applied before it takes the write lock, so two
  // processes opening a new home at once can both try to apply one; the loser's
  // transaction rolls back whole. Try again: then it sees the migration applied.
  for (let attempt = 1; ; attempt++) {
    try {
      migrate(orm, { migrationsFolder: options.migrations ?? migrationsFolder() });
      break;
    } catch (err) {
      const message = String((err as Error).message) + String((err as { cause?: Error }).cause?.message ?? "");
      if (attempt >= 5 || !/already exists|duplicate column|SQLITE_BUSY|database is locked/i.test(message)) {
        sqlite.close();
        throw err;
      }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50 * attempt);
    }
  }
  let closed = false;
  return {
    orm,
    sqlite,
    path,
    close: () => {
      if (closed) return;
      closed = true;
      sqlite.close();
    },
  };
}
