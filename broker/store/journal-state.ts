/**
 * What `tether doctor` reports of an open store: SQLite's journal mode and how
 * many of drizzle's migrations it has applied.
 */
import type { Store } from "./open.js";

export interface JournalState {
  /** "wal" for a store this broker opened. */
  readonly journal: string;
  /** Rows in drizzle's record of applied migrations. */
  readonly appliedMigrations: number;
}

export function journalState(store: Store): JournalState {
  const journal = String(store.sqlite.pragma("journal_mode", { simple: true }));
  const applied = store.sqlite.prepare("select count(*) as n from __drizzle_migrations").get() as { n: number };
  return { journal, appliedMigrations: applied.n };
}
