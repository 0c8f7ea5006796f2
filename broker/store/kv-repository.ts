/**
 * The `kv` table: each extension's durable keys and values. A value is stored
 * as bytes with its encoding ("json": UTF-8 JSON text, or "bytes"). What counts
 * against the quota is every value's length plus its key's UTF-8 length.
 */
import type { Statement } from "better-sqlite3";
import { and, eq, sql } from "drizzle-orm";
import type { Store } from "./open.js";
import { kv } from "./schema.js";

export type KvEncoding = "json" | "bytes";

export interface KvValue {
  readonly value: Buffer;
  readonly encoding: KvEncoding;
}

/** What `put` did: written, or refused because the extension's bytes would exceed the quota. */
export type KvPutOutcome = { readonly written: true } | { readonly written: false; readonly after: number };

export class KvRepository {
  readonly #store: Store;
  // Prepared once per store: kv calls sit on the capability hot path.
  readonly #get: Statement<[string, string], { value: Buffer; encoding: KvEncoding }>;
  readonly #usedExcept: Statement<[string, string], { n: number }>;

  constructor(store: Store) {
    this.#store = store;
    this.#get = store.sqlite.prepare("select value, encoding from kv where extension = ? and key = ?");
    this.#usedExcept = store.sqlite.prepare("select coalesce(sum(length(value) + length(cast(key as blob))), 0) as n from kv where extension = ? and key <> ?");
  }

  get(extension: string, key: string): KvValue | null {
    return this.#get.get(extension, key) ?? null;
  }

  /** Writes `key` unless the extension's bytes, with this value in place of the old one, would exceed `quota`. */
  put(extension: string, key: string, entry: KvValue, quota: number): KvPutOutcome {
    const { value, encoding } = entry;
    // Bytes stored under every other key, plus this one's.
    const after = (this.#usedExcept.get(extension, key)?.n ?? 0) + value.length + Buffer.byteLength(key);
    if (after > quota) return { written: false, after };
    this.#store.orm
      .insert(kv)
      .values({ extension, key, value, encoding, updatedAt: Date.now() })
      .onConflictDoUpdate({ target: [kv.extension, kv.key], set: { value, encoding, updatedAt: Date.now() } })
      .run();
    return { written: true };
  }

  /** Whether there was a value to delete. */
  delete(extension: string, key: string): boolean {
    return this.#store.orm.delete(kv).where(and(eq(kv.extension, extension), eq(kv.key, key))).run().changes > 0;
  }

  /** Up to `limit` keys starting with `prefix`, in key order. */
  list(extension: string, prefix: string, limit: number): string[] {
    // An exact, case-sensitive prefix: LIKE would treat % and _ as wildcards and fold ASCII case.
    return this.#store.orm
      .select({ key: kv.key })
      .from(kv)
      .where(and(eq(kv.extension, extension), sql`substr(cast(${kv.key} as blob), 1, ${Buffer.byteLength(prefix)}) = cast(${prefix} as blob)`))
      .orderBy(kv.key)
      .limit(limit)
      .all()
      .map((r) => r.key);
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
