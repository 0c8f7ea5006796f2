/**
 * The `kv` and `session_kv` tables: each extension's durable keys and values,
 * either its own (`kv.*`) or its own in one session (`skv.*`). A value is
 * stored as bytes with its encoding ("json": UTF-8 JSON text, or "bytes").
 * What counts against the quota is every value's length plus its key's UTF-8
 * length, over both tables: an extension's storage has one bound, however
 * many sessions it keeps state in.
 */
import type { Statement, Transaction } from "better-sqlite3";
import type { Store } from "./open.js";

export type KvEncoding = "json" | "bytes";

export interface KvValue {
  readonly value: Buffer;
  readonly encoding: KvEncoding;
}

/** Whose keys: the extension's own (`session` null), or the extension's in one session. */
export interface KvSpace {
  readonly extension: string;
  readonly session: string | null;
}

/** What `put` did: written, or refused because the extension's bytes would exceed the quota. */
export type KvPutOutcome = { readonly written: true } | { readonly written: false; readonly after: number };

/** What `cas` did: swapped; left alone because the key held something else (`current`); or refused by the quota. */
export type KvCasOutcome =
  | { readonly result: "swapped" }
  | { readonly result: "differs"; readonly current: KvValue | null }
  | { readonly result: "quota"; readonly after: number };

/** Equal values: the same encoding and the same bytes (null: no value). */
export function sameKvValue(a: KvValue | null, b: KvValue | null): boolean {
  if (a === null || b === null) return a === b;
  return a.encoding === b.encoding && a.value.equals(b.value);
}

const SIZE = "length(value) + length(cast(key as blob))";
/** An exact, case-sensitive prefix: LIKE would treat % and _ as wildcards and fold ASCII case. */
const PREFIX = "substr(cast(key as blob), 1, ?) = cast(? as blob)";

/** One table's statements; `where` picks the space's rows (its parameters come first). */
class SpaceStatements {
  readonly get: Statement<unknown[], { value: Buffer; encoding: KvEncoding }>;
  readonly size: Statement<unknown[], { n: number }>;
  readonly put: Statement<unknown[]>;
  readonly delete: Statement<unknown[]>;
  readonly list: Statement<unknown[], { key: string }>;

  constructor(store: Store, table: string, where: string, columns: string, conflict: string) {
    const db = store.sqlite;
    this.get = db.prepare(`select value, encoding from ${table} where ${where} and key = ?`);
    this.size = db.prepare(`select ${SIZE} as n from ${table} where ${where} and key = ?`);
    const marks = columns
      .split(",")
      .map(() => "?")
      .join(", ");
    this.put = db.prepare(
      `insert into ${table} (${columns}, key, value, encoding, updated_at) values (${marks}, ?, ?, ?, ?)` +
        ` on conflict (${conflict}, key) do update set value = excluded.value, ` +
        `encoding = excluded.encoding, updated_at = excluded.updated_at`,
    );
    this.delete = db.prepare(`delete from ${table} where ${where} and key = ?`);
    this.list = db.prepare(`select key from ${table} where ${where} and ${PREFIX} order by key limit ?`);
  }
}

export class KvRepository {
  // Prepared once per store: kv calls sit on the capability hot path.
  readonly #own: SpaceStatements;
  readonly #session: SpaceStatements;
  readonly #used: Statement<[string, string], { n: number }>;
  readonly #cas: Transaction<
    (space: KvSpace, key: string, expected: KvValue | null, next: KvValue | null, quota: number) => KvCasOutcome
  >;

  constructor(store: Store) {
    this.#own = new SpaceStatements(store, "kv", "extension = ?", "extension", "extension");
    this.#session = new SpaceStatements(
      store,
      "session_kv",
      "extension = ? and session_id = ?",
      "extension, session_id",
      "extension, session_id",
    );
    this.#used = store.sqlite.prepare(
      `select (select coalesce(sum(${SIZE}), 0) from kv where extension = ?) + ` +
        `(select coalesce(sum(${SIZE}), 0) from session_kv where extension = ?) as n`,
    );
    this.#cas = store.sqlite.transaction((space, key, expected, next, quota) =>
      this.#casNow(space, key, expected, next, quota),
    );
  }

  #in(space: KvSpace): { statements: SpaceStatements; params: string[] } {
    return space.session === null
      ? { statements: this.#own, params: [space.extension] }
      : { statements: this.#session, params: [space.extension, space.session] };
  }

  get(space: KvSpace, key: string): KvValue | null {
    const { statements, params } = this.#in(space);
    return statements.get.get(...params, key) ?? null;
  }

  /** The bytes the extension stores, in every space. */
  used(extension: string): number {
    return this.#used.get(extension, extension)?.n ?? 0;
  }

  /** Writes `key` unless the extension's bytes, with this value in place of the old one, would exceed `quota`. */
  put(space: KvSpace, key: string, entry: KvValue, quota: number): KvPutOutcome {
    const { statements, params } = this.#in(space);
    const { value, encoding } = entry;
    const old = statements.size.get(...params, key)?.n ?? 0;
    const after = this.used(space.extension) - old + value.length + Buffer.byteLength(key);
    if (after > quota) return { written: false, after };
    statements.put.run(...params, key, value, encoding, Date.now());
    return { written: true };
  }

  /**
   * Writes `next` (null: deletes) only if `key` holds `expected` (null: no
   * value), under the quota as `put` judges it. One immediate transaction: it
   * takes the write lock before reading, so another connection to the file
   * (another broker process on the home) cannot write between the compare
   * and the write.
   */
  cas(space: KvSpace, key: string, expected: KvValue | null, next: KvValue | null, quota: number): KvCasOutcome {
    return this.#cas.immediate(space, key, expected, next, quota);
  }

  #casNow(space: KvSpace, key: string, expected: KvValue | null, next: KvValue | null, quota: number): KvCasOutcome {
    const { statements, params } = this.#in(space);
    const current = statements.get.get(...params, key) ?? null;
    if (!sameKvValue(current, expected)) return { result: "differs", current };
    if (next === null) {
      // Deleting only shrinks: no quota to judge.
      if (current !== null) statements.delete.run(...params, key);
      return { result: "swapped" };
    }
    const keyBytes = Buffer.byteLength(key);
    const old = current === null ? 0 : current.value.length + keyBytes;
    const after = this.used(space.extension) - old + next.value.length + keyBytes;
    if (after > quota) return { result: "quota", after };
    statements.put.run(...params, key, next.value, next.encoding, Date.now());
    return { result: "swapped" };
  }

  /** Whether there was a value to delete. */
  delete(space: KvSpace, key: string): boolean {
    const { statements, params } = this.#in(space);
    return statements.delete.run(...params, key).changes > 0;
  }

  /** Up to `limit` keys starting with `prefix`, in key order. */
  list(space: KvSpace, prefix: string, limit: number): string[] {
    const { statements, params } = this.#in(space);
    return statements.list.all(...params, Buffer.byteLength(prefix), prefix, limit).map((r) => r.key);
  }
}

const repositories = new WeakMap<Store, KvRepository>();

/** The store's kv repository, made on first use (its statements prepared once per store). */
export function kvRepository(store: Store): KvRepository {
  let repository = repositories.get(store);
  if (repository === undefined) {
    repository = new KvRepository(store);
    repositories.set(store, repository);
  }
  return repository;
}
