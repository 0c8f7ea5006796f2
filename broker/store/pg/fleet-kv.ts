/**
 * `kv` and `skv` for a host of a fleet: the keys live in the fleet's
 * PostgreSQL tables (`kv`, `session_kv`), so every host reads what any host
 * wrote, and a put is judged against the extension's bytes on every host at
 * once: the quota check and the write are one transaction holding the
 * extension's advisory lock, so two hosts writing at the same moment cannot
 * both squeeze under the quota. A `cas` compares and writes in that same
 * kind of transaction, so two hosts swapping one key cannot both succeed.
 *
 * The same semantics as the home's `KvRepository`: size is the value's
 * length plus the key's UTF-8 length, over both tables; list order and
 * prefixes are bytewise (collation "C", `starts_with`), never the server's
 * locale.
 */
import { SessionFencedError, type KvStorage } from "../kv-storage.js";
import type { PoolClient } from "pg";
import {
  sameKvValue,
  type KvCasOutcome,
  type KvEncoding,
  type KvPutOutcome,
  type KvSpace,
  type KvValue,
} from "../kv-repository.js";
import type { PgStore } from "./open.js";

const SIZE = "octet_length(value) + octet_length(key)";
/** The first half of every kv advisory lock's key: the second is the extension's name. */
const LOCK_CLASS = "hashtext('tether.kv')";

interface Table {
  readonly name: string;
  /** The space's columns, in parameter order. */
  readonly columns: readonly string[];
}

const OWN: Table = { name: "kv", columns: ["extension"] };
const SESSION: Table = { name: "session_kv", columns: ["extension", "session_id"] };

function inSpace(space: KvSpace): { table: Table; params: string[] } {
  return space.session === null
    ? { table: OWN, params: [space.extension] }
    : { table: SESSION, params: [space.extension, space.session] };
}

/** `extension = $1 and session_id = $2`, numbered from `from`. */
const where = (table: Table, from = 1): string => table.columns.map((c, i) => `${c} = $${from + i}`).join(" and ");

/**
 * The lease holder a session's writes must come from (this
 * host's), or null when this host never leased the session.
 */
export type SessionFence = (session: string) => string | null;

export class FleetKv implements KvStorage {
  readonly #store: PgStore;
  readonly #fence: SessionFence;

  constructor(store: PgStore, fence: SessionFence = () => null) {
    this.#store = store;
    this.#fence = fence;
  }

  async get(space: KvSpace, key: string): Promise<KvValue | null> {
    const { table, params } = inSpace(space);
    const n = params.length;
    const r = await this.#store.pool.query<{ value: Buffer; encoding: KvEncoding }>(
      `select value, encoding from ${table.name} where ${where(table)} and key = $${n + 1}`,
      [...params, key],
    );
    return r.rows[0] ?? null;
  }

  async used(extension: string): Promise<number> {
    const r = await this.#store.pool.query<{ n: string }>(usedSql, [extension]);
    return Number(r.rows[0]?.n ?? 0);
  }

  async put(space: KvSpace, key: string, entry: KvValue, quota: number): Promise<KvPutOutcome> {
    const { table, params } = inSpace(space);
    const n = params.length;
    return this.#locked<KvPutOutcome>(space, async (client) => {
      const used = await usedBy(client, space.extension);
      const old = Number(
        (
          await client.query<{ n: number }>(
            `select ${SIZE} as n from ${table.name} where ${where(table)} and key = $${n + 1}`,
            [...params, key],
          )
        ).rows[0]?.n ?? 0,
      );
      const after = used - old + entry.value.length + Buffer.byteLength(key);
      if (after > quota) return { commit: false, outcome: { written: false, after } };
      await upsert(client, table, params, key, entry);
      return { commit: true, outcome: { written: true } };
    });
  }

  /**
   * Under the lock `put` takes, so the quota holds against every put and cas
   * on every host; the row itself is read `for update`, so a delete (which takes
   * no advisory lock) waits for this transaction rather than slipping
   * between the compare and the write.
   */
  async cas(
    space: KvSpace,
    key: string,
    expected: KvValue | null,
    next: KvValue | null,
    quota: number,
  ): Promise<KvCasOutcome> {
    const { table, params } = inSpace(space);
    const n = params.length;
    return this.#locked<KvCasOutcome>(space, async (client) => {
      const row = (
        await client.query<{ value: Buffer; encoding: KvEncoding }>(
          `select value, encoding from ${table.name} where ${where(table)} and key = $${n + 1} for update`,
          [...params, key],
        )
      ).rows[0];
      const current = row ?? null;
      if (!sameKvValue(current, expected)) return { commit: false, outcome: { result: "differs", current } };
      if (next === null) {
        if (current !== null)
          await client.query(`delete from ${table.name} where ${where(table)} and key = $${n + 1}`, [...params, key]);
        return { commit: true, outcome: { result: "swapped" } };
      }
      const keyBytes = Buffer.byteLength(key);
      const old = current === null ? 0 : current.value.length + keyBytes;
      const after = (await usedBy(client, space.extension)) - old + next.value.length + keyBytes;
      if (after > quota) return { commit: false, outcome: { result: "quota", after } };
      await upsert(client, table, params, key, next);
      return { commit: true, outcome: { result: "swapped" } };
    });
  }

  /** Runs `work` in one fenced transaction holding the extension's advisory lock; commits only when it says so. */
  async #locked<T>(space: KvSpace, work: (client: PoolClient) => Promise<{ commit: boolean; outcome: T }>): Promise<T> {
    return this.#fenced(space, async (client) => {
      await client.query(`select pg_advisory_xact_lock(${LOCK_CLASS}, hashtext($1))`, [space.extension]);
      return work(client);
    });
  }

  /**
   * One transaction; for a session this host leased, it first holds the lease
   * row `for share`, so a host that lost the session (frozen past its lease)
   * writes nothing, and a takeover waits until this write has committed.
   */
  async #fenced<T>(space: KvSpace, work: (client: PoolClient) => Promise<{ commit: boolean; outcome: T }>): Promise<T> {
    const client = await this.#store.pool.connect();
    try {
      await client.query("begin");
      try {
        const holder = space.session === null ? null : this.#fence(space.session);
        if (holder !== null) {
          const held = await client.query(
            "select 1 from session_leases where session_id = $1 and host = $2 for share",
            [space.session, holder],
          );
          if (held.rows.length === 0)
            throw new SessionFencedError(
              `session '${space.session}' is no longer served by this ` +
                `host (its lease is another host's): skv writes nothing here`,
            );
        }
        const { commit, outcome } = await work(client);
        await client.query(commit ? "commit" : "rollback");
        return outcome;
      } catch (err) {
        await client.query("rollback").catch(() => {});
        throw err;
      }
    } finally {
      client.release();
    }
  }

  async delete(space: KvSpace, key: string): Promise<boolean> {
    const { table, params } = inSpace(space);
    return this.#fenced(space, async (client) => {
      const r = await client.query(`delete from ${table.name} where ${where(table)} and key = $${params.length + 1}`, [
        ...params,
        key,
      ]);
      return { commit: true, outcome: (r.rowCount ?? 0) > 0 };
    });
  }

  async data(extension: string): Promise<FleetKvData> {
    const pool = this.#store.pool;
    const [kv, skv] = await Promise.all([
      pool.query<{ keys: string; bytes: string }>(
        `select count(*) as keys, coalesce(sum(${SIZE}), 0) as bytes from kv where extension = $1`,
        [extension],
      ),
      pool.query<{ keys: string; bytes: string; sessions: string }>(
        `select count(*) as keys, coalesce(sum(${SIZE}), 0) as bytes, ` +
          `count(distinct session_id) as sessions from session_kv where extension = $1`,
        [extension],
      ),
    ]);
    const k = kv.rows[0]!;
    const s = skv.rows[0]!;
    return {
      kv: { keys: Number(k.keys), bytes: Number(k.bytes) },
      skv: { keys: Number(s.keys), bytes: Number(s.bytes), sessions: Number(s.sessions) },
    };
  }

  /** Removes every key of `extension`, on every host (`tether uninstall --purge`). */
  async purge(extension: string): Promise<void> {
    const client = await this.#store.pool.connect();
    try {
      await client.query("begin");
      await client.query("delete from kv where extension = $1", [extension]);
      await client.query("delete from session_kv where extension = $1", [extension]);
      await client.query("commit");
    } catch (err) {
      await client.query("rollback").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  async list(space: KvSpace, prefix: string, limit: number): Promise<string[]> {
    const { table, params } = inSpace(space);
    const n = params.length;
    const r = await this.#store.pool.query<{ key: string }>(
      `select key from ${table.name} where ${where(table)} and ` +
        `starts_with(key, $${n + 1}) order by key collate "C" limit $${n + 2}`,
      [...params, prefix, limit],
    );
    return r.rows.map((row) => row.key);
  }
}

/** An extension's keys in the fleet: the counts `tether uninstall` and `tether status` show. */
export interface FleetKvData {
  readonly kv: { readonly keys: number; readonly bytes: number };
  readonly skv: { readonly keys: number; readonly bytes: number; readonly sessions: number };
}

/** The bytes the extension stores, in every space, read inside the caller's transaction. */
async function usedBy(client: PoolClient, extension: string): Promise<number> {
  return Number((await client.query<{ n: string }>(usedSql, [extension])).rows[0]?.n ?? 0);
}

/** Writes `key` in the space, replacing what was there. */
async function upsert(
  client: PoolClient,
  table: Table,
  params: readonly string[],
  key: string,
  entry: KvValue,
): Promise<void> {
  const columns = [...table.columns, "key", "value", "encoding", "updated_at"];
  await client.query(
    `insert into ${table.name} (${columns.join(", ")}) values (${columns.map((_, i) => `$${i + 1}`).join(", ")})` +
      ` on conflict (${table.columns.join(", ")}, key) do update set value = ` +
      `excluded.value, encoding = excluded.encoding, updated_at = excluded.updated_at`,
    [...params, key, entry.value, entry.encoding, Date.now()],
  );
}

const usedSql =
  `select (select coalesce(sum(${SIZE}), 0) from kv where extension = $1) + ` +
  `(select coalesce(sum(${SIZE}), 0) from session_kv where extension = $1) as n`;
