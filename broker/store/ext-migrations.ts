/**
 * Running migrations on an extension's own database: every pending one in a
 * single `BEGIN IMMEDIATE` transaction, each statement checked again against
 * the allowlist, then `PRAGMA user_version` set to the last one's number in
 * that same transaction — so the database says itself which migrations it
 * has, and a failure anywhere leaves it exactly as it was.
 */
import type Database from "better-sqlite3";
import { splitStatements } from "../registry/migration-summary.js";
import { openExtensionDb } from "./ext-db.js";
import { checkStatement, stripComments } from "./sql-allowlist.js";

export interface MigrationText {
  readonly number: number;
  readonly name: string;
  readonly text: string;
}

/** Why a migration failed: which one, which statement, what SQLite said. */
export class MigrationFailure extends Error {
  constructor(
    readonly migration: string,
    readonly statement: number,
    readonly sql: string,
    readonly reason: string,
  ) {
    super(
      statement === 0
        ? `migration ${migration} failed: ${reason}`
        : `migration ${migration} failed at statement ${statement} ` +
            `(${stripComments(sql).replace(/\s+/g, " ").trim().slice(0, 80)}): ${reason}`,
    );
  }
}

/** The number of the last migration the open database has (`PRAGMA user_version`). */
export function userVersion(db: Database.Database): number {
  return db.pragma("user_version", { simple: true }) as number;
}

/**
 * Runs `pending` (in order, numbered after what the database has) in one
 * transaction under the quota; throws a MigrationFailure after rolling back.
 */
export function runMigrations(
  home: string,
  extension: string,
  maxBytes: number,
  pending: readonly MigrationText[],
  starting: (m: MigrationText) => void = () => {},
): void {
  if (pending.length === 0) return;
  const db = openExtensionDb(home, extension, maxBytes);
  try {
    const at = userVersion(db);
    if (pending[0]!.number !== at + 1)
      throw new MigrationFailure(
        pending[0]!.name,
        0,
        "",
        `the database is at migration ${at}, not ${pending[0]!.number - 1}`,
      );
    db.exec("BEGIN IMMEDIATE");
    try {
      for (const m of pending) {
        starting(m);
        splitStatements(m.text).forEach((sql, i) => {
          const check = checkStatement(sql);
          if (!check.ok) throw new MigrationFailure(m.name, i + 1, sql, `${check.msg} (rule: ${check.rule})`);
          try {
            const stmt = db.prepare(sql);
            if (stmt.reader) stmt.all();
            else stmt.run();
          } catch (err) {
            const code = (err as { code?: string }).code ?? "";
            const reason =
              code === "SQLITE_FULL"
                ? `the database would grow past its quota of ${maxBytes} bytes ([storage] max_bytes)`
                : (err as Error).message.slice(0, 300);
            throw new MigrationFailure(m.name, i + 1, sql, reason);
          }
        });
        // The broker's own pragma (not the extension's, which the allowlist refuses): part of the transaction.
        db.pragma(`user_version = ${m.number}`);
      }
      db.exec("COMMIT");
    } catch (err) {
      if (db.inTransaction) db.exec("ROLLBACK");
      throw err;
    }
  } finally {
    db.close();
  }
}
