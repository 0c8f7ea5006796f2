/**
 * An in-memory `db` for tests: the broker's answers to `db.query` and
 * `db.exec` (broker/caps/db.ts, broker/store/ext-db.ts) over a real SQLite —
 * Deno's built-in `node:sqlite`, in memory — with the broker's allowlist
 * (jail-runtime/wire/sql-allowlist.ts, shared with it), its row and reply
 * bounds, its quota, and its `(rule: storage.…)` wording. Migrations
 * (`NNNN_name.sql` files of a folder) are applied in order at construction.
 */
import * as v from "valibot";
import { checkStatement, splitStatements } from "../../wire/sql-allowlist.js";
import { builtin } from "./builtin.js";
import { refused, type CapReply } from "./reply.js";

/** The broker's bounds on one query's answer (broker/store/ext-db.ts). */
export const MAX_ROWS = 1000;
export const MAX_REPLY_BYTES = 1_048_576;
/** The broker's default `[storage] max_bytes`. */
export const DEFAULT_DB_BYTES = 10_485_760;

// The broker's argument schema and usage text (broker/caps/db.ts, dispatcher.ts).
const MAX_TEXT = 1_048_576;
const Value = v.union([
  v.null(),
  v.pipe(v.number(), v.finite()),
  v.pipe(v.string(), v.maxLength(MAX_TEXT)),
  v.boolean(),
  v.object({ bytes: v.pipe(v.string(), v.maxLength(Math.ceil((MAX_TEXT * 4) / 3) + 4), v.base64()) }),
]);
const Params = v.union([
  v.pipe(v.array(Value), v.maxLength(256)),
  v.pipe(
    v.record(v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/)), Value),
    v.check((r) => Object.keys(r).length <= 256, "at most 256 named parameters"),
  ),
]);
const DbArgs = v.object({ sql: v.pipe(v.string(), v.minLength(1), v.maxLength(16_384)), params: v.optional(Params) });
const USAGE = (mode: string) =>
  `db.${mode} takes {sql, params?} (params: an array or a record of null, number, string, boolean or {bytes (base64)})`;

type SqlValue = null | number | string | Uint8Array;
/** A row as `db.query` answers it. */
export type Row = Record<string, SqlValue>;

/** What of `node:sqlite` the fake uses (its types are Deno's; the SDK compiles without them). */
interface Statement {
  columns(): unknown[];
  all(...params: unknown[]): Record<string, unknown>[];
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
}
interface Database {
  prepare(sql: string): Statement;
  exec(sql: string): void;
  close(): void;
}
function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

const toSql = (x: v.InferOutput<typeof Value>): SqlValue =>
  x === null || typeof x === "number" || typeof x === "string"
    ? x
    : typeof x === "boolean"
      ? x
        ? 1
        : 0
      : fromBase64(x.bytes);

function bound(params: v.InferOutput<typeof Params> | undefined): unknown[] {
  if (params === undefined) return [];
  if (Array.isArray(params)) return params.map(toSql);
  return [Object.fromEntries(Object.entries(params).map(([k, x]) => [k, toSql(x)]))];
}

const fromSql = (x: unknown): SqlValue =>
  typeof x === "bigint" ? Number(x) : x instanceof Uint8Array ? x.slice() : (x as SqlValue);
const sizeOf = (row: Row): number =>
  Object.entries(row).reduce(
    (n, [k, x]) => n + k.length + (x instanceof Uint8Array ? x.length : JSON.stringify(x ?? null).length),
    0,
  );

export interface FakeDbOptions {
  /**
   * A folder of migrations, `NNNN_name.sql` files applied in the order of
   * their names, each split into statements at `;` (a path, relative to the
   * working directory, or a `file:` URL such as `new URL("./migrations", import.meta.url)`).
   * Reading it needs `deno test --allow-read`.
   */
  readonly migrations?: string | URL;
  /** The `[storage] max_bytes` quota (default 10 MiB): past it a write is refused with `storage.max_bytes`. */
  readonly maxBytes?: number;
}

/**
 * One extension's database, in memory, answering `db.query` and `db.exec`
 * as the broker does: one allowed statement per call, values bound, rows as
 * plain objects (BLOBs as `Uint8Array`), refusals `denied … (rule: storage.…)`.
 *
 * @example
 * ```ts
 * import { FakeDb } from "@tether/ext/testing";
 * const db = new FakeDb();
 * db.run("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)");
 * db.run("INSERT INTO notes (text) VALUES (?)", ["hello"]);
 * db.rows("SELECT text FROM notes"); // [{ text: "hello" }]
 * ```
 */
export class FakeDb {
  readonly maxBytes: number;
  /** The migration files applied, in order (their names). */
  readonly migrations: readonly string[];
  readonly #db: Database;

  constructor(options: FakeDbOptions = {}) {
    this.maxBytes = options.maxBytes ?? DEFAULT_DB_BYTES;
    const { DatabaseSync } = builtin<{ DatabaseSync: new (path: string) => Database }>("node:sqlite", "FakeDb");
    this.#db = new DatabaseSync(":memory:");
    this.migrations = options.migrations === undefined ? [] : this.#migrate(options.migrations);
    const page = Number(this.#db.prepare("PRAGMA page_size").all()[0]?.["page_size"] ?? 4096);
    for (const schema of ["main", "temp"])
      this.#db.exec(`PRAGMA ${schema}.max_page_count = ${Math.max(1, Math.floor(this.maxBytes / page))}`);
  }

  /**
   * Applies each `NNNN_name.sql` of `folder` in order, as the broker does at
   * approval: in one transaction, checked against the allowlist, with
   * `PRAGMA user_version` moved to the last one's number.
   */
  #migrate(folder: string | URL): string[] {
    const fs = builtin<{
      readdirSync(p: string | URL): string[];
      readFileSync(p: string | URL, encoding: "utf8"): string;
    }>("node:fs", "FakeDb");
    const files = fs.readdirSync(folder).sort();
    let current = "";
    this.#db.exec("BEGIN");
    try {
      files.forEach((name, i) => {
        current = name;
        const m = /^(\d{4})_[a-z0-9][a-z0-9_]{0,63}\.sql$/.exec(name);
        if (m === null || Number(m[1]) !== i + 1)
          throw new Error(
            `expected ${String(i + 1).padStart(4, "0")}_name.sql (numbered from 0001, lowercase, nothing else ` +
              `in the folder), as the broker does at install`,
          );
        const file =
          typeof folder === "string"
            ? `${folder.replace(/\/+$/, "")}/${name}`
            : new URL(name, folder.href.endsWith("/") ? folder.href : `${folder.href}/`);
        splitStatements(fs.readFileSync(file, "utf8")).forEach((statement, j) => {
          const check = checkStatement(statement);
          if (!check.ok) throw new Error(`statement ${j + 1}: ${check.msg} (rule: ${check.rule})`);
          this.#db.prepare(statement).run();
        });
        this.#db.exec(`PRAGMA user_version = ${i + 1}`);
      });
      this.#db.exec("COMMIT");
    } catch (err) {
      this.#db.exec("ROLLBACK");
      throw new Error(`FakeDb: migration ${current} failed: ${(err as Error).message}`);
    }
    return files;
  }

  /** Runs one statement as a test's setup would: no allowlist, no bounds. */
  run(
    sql: string,
    params: readonly SqlValue[] | Readonly<Record<string, SqlValue>> = [],
  ): { changes: number; lastInsertRowid: number } {
    const r = this.#db.prepare(sql).run(...(Array.isArray(params) ? params : [params]));
    return { changes: Number(r.changes), lastInsertRowid: Number(r.lastInsertRowid) };
  }

  /** The rows of one statement, for assertions: no allowlist, no bounds. */
  rows(sql: string, params: readonly SqlValue[] | Readonly<Record<string, SqlValue>> = []): Row[] {
    return this.#db
      .prepare(sql)
      .all(...(Array.isArray(params) ? params : [params]))
      .map((raw) => Object.fromEntries(Object.entries(raw).map(([k, x]) => [k, fromSql(x)])));
  }

  close(): void {
    this.#db.close();
  }

  /** Answers one `db.query` or `db.exec` capability call (the stand-in broker's part). */
  serve(cap: "db.query" | "db.exec", args: unknown): CapReply {
    const mode = cap === "db.query" ? "query" : "exec";
    const parsed = v.safeParse(DbArgs, args);
    if (!parsed.success) return refused("bad_arguments", "args", USAGE(mode));
    const { sql, params } = parsed.output;
    const deny = (rule: string, msg: string) => refused("denied", rule, `db.${mode}: ${msg}`);
    const check = checkStatement(sql);
    if (!check.ok) return deny(check.rule, check.msg);
    // better-sqlite3's prepare refuses a second statement; node:sqlite would run only the first.
    if (splitStatements(sql).length > 1)
      return deny("storage.one_statement", "one statement per call (no ';'-chained statements)");
    let stmt: Statement;
    try {
      stmt = this.#db.prepare(sql);
    } catch (err) {
      return deny("storage.sql", `the statement does not prepare: ${(err as Error).message.slice(0, 200)}`);
    }
    const reader = stmt.columns().length > 0;
    if (mode === "query" && !reader) return deny("storage.statement", "this statement returns no rows; use db.exec");
    if (mode === "exec" && reader) return deny("storage.statement", "this statement returns rows; use db.query");
    try {
      if (mode === "exec") {
        const r = stmt.run(...bound(params));
        return { ok: true, value: { changes: Number(r.changes), lastInsertRowid: Number(r.lastInsertRowid) } };
      }
      const rows: Row[] = [];
      let bytes = 0;
      for (const raw of stmt.all(...bound(params))) {
        const row = Object.fromEntries(Object.entries(raw).map(([k, x]) => [k, fromSql(x)]));
        bytes += sizeOf(row);
        if (rows.length >= MAX_ROWS) return deny("storage.rows", `more than ${MAX_ROWS} rows; add a LIMIT`);
        if (bytes > MAX_REPLY_BYTES)
          return deny(
            "storage.reply_bytes",
            `more than ${MAX_REPLY_BYTES} bytes of rows; select fewer columns or add a LIMIT`,
          );
        rows.push(row);
      }
      return { ok: true, value: rows };
    } catch (err) {
      const message = (err as Error).message;
      if (/database or disk is full|SQLITE_FULL/i.test(message))
        return deny(
          "storage.max_bytes",
          `the database would grow past its quota of ${this.maxBytes} bytes ([storage] max_bytes)`,
        );
      return deny("storage.sql", message.slice(0, 200));
    }
  }
}
