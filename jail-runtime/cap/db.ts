/**
 * `db`: the extension's own SQLite database, declared with `[storage]` in its
 * manifest (docs/storage.md). One statement per call, parameters always
 * bound; the broker checks each statement against its allowlist before it
 * runs and audits its kind and table, never its values.
 */
import { callCap } from "./invocation.js";
import { toBase64 } from "./base64.js";

/** A value a statement binds or a row holds: bytes are a BLOB. */
export type SqlValue = null | number | string | boolean | Uint8Array;
export type SqlParams = readonly SqlValue[] | Readonly<Record<string, SqlValue>>;
export type Row = Record<string, null | number | string | Uint8Array>;

const wire = (x: SqlValue): unknown => (x instanceof Uint8Array ? { bytes: toBase64(x) } : x);

function wireParams(params: SqlParams | undefined): unknown {
  if (params === undefined) return undefined;
  if (Array.isArray(params)) return params.map(wire);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(params as Record<string, SqlValue>)) out[k] = wire(x);
  return out;
}

const args = (sql: string, params: SqlParams | undefined) =>
  params === undefined ? { sql } : { sql, params: wireParams(params) };

/**
 * Runs one statement that returns rows (at most 1000 rows, 1 MiB).
 *
 * @example
 * ```ts
 * import { db } from "@tether/cap";
 * const rows = await db.query("SELECT id, text FROM notes WHERE pinned = ?", [1]);
 * ```
 */
export async function query(sql: string, params?: SqlParams): Promise<Row[]> {
  return (await callCap("db.query", args(sql, params))) as Row[];
}

/**
 * Runs one statement that returns no rows.
 *
 * @example
 * ```ts
 * import { db } from "@tether/cap";
 * const { lastInsertRowid } = await db.exec("INSERT INTO notes (text) VALUES (?)", ["hello"]);
 * ```
 */
export async function exec(sql: string, params?: SqlParams): Promise<{ changes: number; lastInsertRowid: number }> {
  return (await callCap("db.exec", args(sql, params))) as { changes: number; lastInsertRowid: number };
}
