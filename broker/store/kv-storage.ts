/**
 * Where an extension's `kv` and `skv` keys live: this home's store
 * (`KvRepository`, synchronous), or, for a host of a fleet, the fleet's
 * PostgreSQL store (`FleetKv`), so that every host reads the same keys and
 * the `[limits] kv_bytes` quota holds across hosts. The capabilities see only
 * this interface; either answer may be a promise.
 */
import type { KvCasOutcome, KvPutOutcome, KvSpace, KvValue } from "./kv-repository.js";

type Maybe<T> = T | Promise<T>;

/**
 * A write to a session's keys refused because this host no
 * longer holds the session's lease (another host serves it).
 */
export class SessionFencedError extends Error {}

export interface KvStorage {
  get(space: KvSpace, key: string): Maybe<KvValue | null>;
  /** Writes `key` unless the extension's bytes, with this value in place of the old one, would exceed `quota`. */
  put(space: KvSpace, key: string, entry: KvValue, quota: number): Maybe<KvPutOutcome>;
  /**
   * Compare-and-set: writes `next` (null: deletes `key`) only if `key` holds
   * exactly `expected` (null: no value), judged against `quota` as `put` is;
   * the compare, the quota check and the write are one transaction.
   */
  cas(space: KvSpace, key: string, expected: KvValue | null, next: KvValue | null, quota: number): Maybe<KvCasOutcome>;
  /** Whether there was a value to delete. */
  delete(space: KvSpace, key: string): Maybe<boolean>;
  /** Up to `limit` keys starting with `prefix`, in key order (bytewise). */
  list(space: KvSpace, prefix: string, limit: number): Maybe<string[]>;
  /** The bytes the extension stores, in every space. */
  used(extension: string): Maybe<number>;
}
