/**
 * An extension's own SQLite database: `<home>/data/<ext>.sqlite` (0600, in a
 * 0700 folder), opened for one call and closed after it (nothing is held
 * between invocations, and another broker process sees the same file). Its
 * size quota is `PRAGMA max_page_count`, so SQLite itself refuses to grow past
 * it; the connection is defensive (better-sqlite3's default) with
 * `trusted_schema = OFF`. It runs in the extension's database jail
 * (db-processes.ts), which shows it the file and its journal alone: the
 * journal is truncated, never deleted (a bound file cannot be).
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { checkStatement } from "./sql-allowlist.js";
import { sqliteAddonOption } from "./sqlite-addon.js";

/** At most this many rows in one query's answer. */
export const MAX_ROWS = 1000;
/** At most this many bytes (values as JSON text, bytes counted raw) in one query's answer. */
export const MAX_REPLY_BYTES = 1_048_576;

export type SqlValue = null | number | string | Uint8Array;
export type SqlParams = readonly SqlValue[] | Readonly<Record<string, SqlValue>>;

export type DbResult =
  | {
      readonly ok: true;
      readonly kind: string;
      readonly table: string;
      readonly value: unknown;
      readonly bytes: number;
    }
  | { readonly ok: false; readonly kind: string; readonly table: string; readonly rule: string; readonly msg: string };

export const dataDir = (home: string): string => join(home, "data");
export const dbFile = (home: string, extension: string): string => join(dataDir(home), `${extension}.sqlite`);

/** The database file's size in bytes, or null when the extension has none. */
export function dbSize(home: string, extension: string): number | null {
  const file = dbFile(home, extension);
  return existsSync(file) ? statSync(file).size : null;
}

/** Opens (creating 0600) the extension's database with its quota. */
export function openExtensionDb(home: string, extension: string, maxBytes: number): Database.Database {
  mkdirSync(dataDir(home), { recursive: true, mode: 0o700 });
  const file = dbFile(home, extension);
  if (!existsSync(file)) closeSync(openSync(file, "a", 0o600));
  chmodSync(file, 0o600);
  const db = new Database(file, { timeout: 5000, ...sqliteAddonOption() });
  try {
    // The journal stays where the jail bound it: truncated at commit, never unlinked.
    db.pragma("journal_mode = TRUNCATE");
    db.pragma("trusted_schema = OFF");
    // Sorts and temporary tables in SQLite's (capped) heap, not in files the quota does not see.
    db.pragma("temp_store = MEMORY");
    const page = db.pragma("page_size", { simple: true }) as number;
    // At least one page, so an empty database can still be read.
    // The temp schema too (CREATE TEMP TABLE, CREATE TABLE temp.x): without it, it grows without bound for the call.
    for (const schema of ["main", "temp"])
      db.pragma(`${schema}.max_page_count = ${Math.max(1, Math.floor(maxBytes / page))}`);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

const bound = (values: SqlParams | undefined): unknown[] => {
  if (values === undefined) return [];
  return Array.isArray(values)
    ? values.map(toSql)
    : [Object.fromEntries(Object.entries(values).map(([k, x]) => [k, toSql(x)]))];
};
const toSql = (x: SqlValue): unknown => (x instanceof Uint8Array ? Buffer.from(x) : x);
const fromSql = (x: unknown): unknown =>
  Buffer.isBuffer(x) ? new Uint8Array(x) : typeof x === "bigint" ? Number(x) : x;

const sizeOf = (row: Record<string, unknown>): number =>
  Object.entries(row).reduce(
    (n, [k, x]) => n + k.length + (x instanceof Uint8Array ? x.length : JSON.stringify(x ?? null).length),
    0,
  );

/** Statements whose tables SQLite itself names (the rest — DDL, pragmas — keep the name their text gives). */
const DATA_KINDS = new Set(["select", "insert", "replace", "update", "delete", "with", "values"]);

/**
 * The tables a prepared statement reads and writes, from SQLite's own program for it
 * (`EXPLAIN`: every cursor it opens, triggers' programs included), by root page; an
 * index counts as its table; `main.` is dropped, `temp.` kept. Virtual tables (FTS)
 * open no such cursor on their own storage: they are named by the statement's text.
 */
export function statementTables(
  db: Database.Database,
  sql: string,
  params?: SqlParams,
): { reads: string[]; writes: string[] } | null {
  const pages = new Map<string, string>();
  for (const [index, schema] of [
    [0, "main"],
    [1, "temp"],
  ] as const) {
    const rows = db
      .prepare(`SELECT tbl_name AS t, rootpage AS p FROM ${schema}.sqlite_schema WHERE rootpage > 0`)
      .all() as Array<{ t: string; p: number }>;
    pages.set(`${index}:1`, schema === "main" ? "sqlite_schema" : "temp.sqlite_schema");
    for (const r of rows) pages.set(`${index}:${r.p}`, schema === "main" ? r.t : `temp.${r.t}`);
  }
  const reads = new Set<string>();
  const writes = new Set<string>();
  let program: Array<{ opcode: string; p2: number; p3: number }>;
  try {
    // The call's own values: better-sqlite3 wants every parameter bound, even to explain.
    program = db.prepare(`EXPLAIN ${sql}`).all(...bound(params)) as typeof program;
  } catch {
    return null;
  }
  for (const op of program) {
    if (op.opcode !== "OpenRead" && op.opcode !== "OpenWrite" && op.opcode !== "ReopenIdx") continue;
    const name = pages.get(`${op.p3}:${op.p2}`);
    if (name === undefined) continue;
    (op.opcode === "OpenWrite" ? writes : reads).add(name);
  }
  for (const w of writes) reads.delete(w);
  return { reads: [...reads].sort(), writes: [...writes].sort() };
}

/** What the audit and hooks name: what it writes, else what it reads (`delete notes`, `insert notes, log`). */
function namedTables(kind: string, textTable: string, tables: { reads: string[]; writes: string[] } | null): string {
  if (tables === null || !DATA_KINDS.has(kind)) return textTable;
  const names = tables.writes.length > 0 ? tables.writes : tables.reads;
  return names.length > 0 ? names.join(", ") : textTable;
}

/** The statement's kind and the tables SQLite says it touches, without running it (what `cap_call` hooks are shown). */
export function explainStatement(
  home: string,
  extension: string,
  maxBytes: number,
  sql: string,
  params?: SqlParams,
): DbResult {
  const check = checkStatement(sql);
  if (!check.ok) return { ok: false, kind: "refused", table: "", rule: check.rule, msg: check.msg };
  const db = openExtensionDb(home, extension, maxBytes);
  try {
    const tables = statementTables(db, sql, params);
    return { ok: true, kind: check.kind, table: namedTables(check.kind, check.table, tables), value: tables, bytes: 0 };
  } catch {
    // It does not prepare: its text's name stands; running it says why.
    return { ok: true, kind: check.kind, table: check.table, value: null, bytes: 0 };
  } finally {
    db.close();
  }
}

/**
 * Runs one allowed statement: `query` wants one that returns rows, `exec` one
 * that does not. `unchecked`: the escape suite's bypass of the allowlist.
 */
export function runStatement(
  home: string,
  extension: string,
  maxBytes: number,
  mode: "query" | "exec",
  sql: string,
  params?: SqlParams,
  unchecked = false,
): DbResult {
  const check = unchecked ? ({ ok: true, kind: "unchecked", table: "" } as const) : checkStatement(sql);
  if (!check.ok) return { ok: false, kind: "refused", table: "", rule: check.rule, msg: `db.${mode}: ${check.msg}` };
  const { kind, table } = check;
  const fail = (rule: string, msg: string): DbResult => ({ ok: false, kind, table, rule, msg: `db.${mode}: ${msg}` });
  const db = openExtensionDb(home, extension, maxBytes);
  try {
    let stmt: Database.Statement;
    try {
      stmt = db.prepare(sql);
    } catch (err) {
      // better-sqlite3's RangeError (matched by text: under a VM realm instanceof would miss it).
      if (/more than one statement/.test((err as Error).message))
        return fail("storage.one_statement", "one statement per call (no ';'-chained statements)");
      return fail("storage.sql", `the statement does not prepare: ${(err as Error).message.slice(0, 200)}`);
    }
    if (mode === "query" && !stmt.reader)
      return fail("storage.statement", "this statement returns no rows; use db.exec");
    if (mode === "exec" && stmt.reader) return fail("storage.statement", "this statement returns rows; use db.query");
    try {
      if (mode === "exec") {
        const r = stmt.run(...bound(params));
        return {
          ok: true,
          kind,
          table,
          value: { changes: r.changes, lastInsertRowid: Number(r.lastInsertRowid) },
          bytes: 0,
        };
      }
      const rows: Record<string, unknown>[] = [];
      let bytes = 0;
      for (const raw of stmt.iterate(...bound(params)) as Iterable<Record<string, unknown>>) {
        const row = Object.fromEntries(Object.entries(raw).map(([k, x]) => [k, fromSql(x)]));
        bytes += sizeOf(row);
        if (rows.length >= MAX_ROWS) return fail("storage.rows", `more than ${MAX_ROWS} rows; add a LIMIT`);
        if (bytes > MAX_REPLY_BYTES)
          return fail(
            "storage.reply_bytes",
            `more than ${MAX_REPLY_BYTES} bytes of rows; select fewer columns or add a LIMIT`,
          );
        rows.push(row);
      }
      return { ok: true, kind, table, value: rows, bytes };
    } catch (err) {
      const code = (err as { code?: string }).code ?? "";
      if (code === "SQLITE_FULL")
        return fail(
          "storage.max_bytes",
          `the database would grow past its quota of ${maxBytes} bytes ([storage] max_bytes)`,
        );
      return fail("storage.sql", (err as Error).message.slice(0, 200));
    }
  } finally {
    db.close();
  }
}
