/** How long closing waits for clients still checked out (a query stranded by a partition) before it lets them go. */
const CLOSE_MS = 3_000;

/** Ends the pool; one whose checked-out clients do not come back in time is left to the process's exit. */
function endWithin(pool: pg.Pool, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    pool.end().then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });
}

/**
 * Opens the fleet's shared store: a PostgreSQL database (docs/fleet.md),
 * its migrations from drizzle-pg/ applied at open under an advisory lock, so
 * brokers opening it at once apply each migration once. A store whose
 * migrations are all applied is only read: the migrator's record is checked
 * first, so a role with data rights alone opens it (docs/fleet.md#roles), and
 * the rights the broker needs are checked before it is used (./rights.ts).
 */
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import { readMigrationFiles } from "drizzle-orm/migrator";
import pg from "pg";
import * as schema from "./schema.js";
import { INSUFFICIENT_PRIVILEGE, missingRights, pgCode, pgMessage, ROLES_DOC, StoreRightsError } from "./rights.js";

export type PgOrm = NodePgDatabase<typeof schema>;

export interface PgStore {
  readonly pool: pg.Pool;
  readonly orm: PgOrm;
  /** The URL with its password left out, for messages. */
  readonly shown: string;
  close(): Promise<void>;
}

const HERE = dirname(fileURLToPath(import.meta.url));
/** Any key: the one lock every broker takes to migrate. */
const MIGRATION_LOCK = 0x7e7e_0001;

export function pgMigrationsFolder(): string {
  for (const candidate of [resolve(HERE, "../../../drizzle-pg"), resolve(HERE, "../../../../drizzle-pg")]) {
    if (existsSync(resolve(candidate, "meta/_journal.json"))) return candidate;
  }
  throw new Error("Cannot find the drizzle-pg/ migrations folder beside the broker");
}

/** `postgres://user:secret@host/db` → `postgres://user@host/db`. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = "";
    return u.toString();
  } catch {
    return "(not a URL)";
  }
}

/** Whether `url` names a PostgreSQL store. */
export const isPgUrl = (url: string): boolean => /^postgres(?:ql)?:\/\//.test(url);

export interface PgStoreOptions {
  readonly connectTimeoutMs?: number;
  /**
   * How long the server lets one of this store's connections sit inside a transaction
   * waiting for its next statement before it ends the connection (PostgreSQL's
   * idle_in_transaction_session_timeout). A fleet host sets its lease: a host frozen
   * mid-transaction (stopped, swapped out) would otherwise hold its row locks for as long
   * as it stays frozen, and the host taking its sessions over would wait on them.
   */
  readonly idleInTransactionMs?: number;
}

export async function openPgStore(url: string, options: PgStoreOptions = {}): Promise<PgStore> {
  const pool = new pg.Pool({
    connectionString: url,
    max: 8,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    ...(options.idleInTransactionMs !== undefined
      ? { idle_in_transaction_session_timeout: options.idleInTransactionMs }
      : {}),
  });
  pool.on("error", () => {}); // an idle client's failure is seen by the next query
  // A checked-out client's lost connection (a partition mid-transaction) is also emitted as an event: the
  // failing query reports it to its caller; unheard, the event would end the process.
  pool.on("connect", (client) => void client.on("error", () => {}));
  try {
    const client = await pool.connect();
    try {
      if ((await appliedState(client)).pending) {
        await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
        try {
          await migrate(drizzle(client, { schema }), { migrationsFolder: pgMigrationsFolder() });
        } catch (err) {
          if (pgCode(err) !== INSUFFICIENT_PRIVILEGE) throw err;
          const { applied, shipped } = await appliedState(client).catch(() => ({ applied: 0, shipped: 0 }));
          const role = (await client.query<{ r: string }>("SELECT current_user AS r")).rows[0]!.r;
          throw new Error(
            `${applied} of the ${shipped} migrations this broker ships are applied, and ` +
              `role ${role} cannot apply the rest (${pgMessage(err)}): the role that owns ` +
              `the tables applies them first, with tether doctor --store (${ROLES_DOC})`,
          );
        } finally {
          await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]);
        }
      }
      const { role, missing } = await missingRights(client);
      if (missing.length > 0) throw new StoreRightsError(role, missing);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end();
    throw err;
  }
  return { pool, orm: drizzle(pool, { schema }), shown: shownUrl(url), close: () => endWithin(pool, CLOSE_MS) };
}

/**
 * How many of the shipped migrations the store has, read from the migrator's
 * record without writing anything (drizzle's `migrate` creates its schema and
 * table first, which needs CREATE). Pending when the newest applied is older
 * than the newest shipped, as drizzle's migrator decides.
 */
async function appliedState(client: pg.PoolClient): Promise<{ pending: boolean; applied: number; shipped: number }> {
  const shipped = readMigrationFiles({ migrationsFolder: pgMigrationsFolder() });
  const newest = Math.max(...shipped.map((m) => m.folderMillis));
  let rows: Array<{ n: string; last: string | null }>;
  try {
    rows = (
      await client.query<{ n: string; last: string | null }>(
        "SELECT count(*) AS n, max(created_at) AS last FROM drizzle.__drizzle_migrations",
      )
    ).rows;
  } catch (err) {
    const code = pgCode(err);
    // No schema drizzle, or no record in it: a new database.
    if (code === "3F000" || code === "42P01") return { pending: true, applied: 0, shipped: shipped.length };
    if (code === INSUFFICIENT_PRIVILEGE) {
      throw new Error(
        `cannot read the migrator's record drizzle.__drizzle_migrations (${pgMessage(err)}): grant ` +
          `the role USAGE on schema drizzle and SELECT on drizzle.__drizzle_migrations (${ROLES_DOC})`,
      );
    }
    throw err;
  }
  const last = rows[0]?.last ?? null;
  return { pending: last === null || Number(last) < newest, applied: Number(rows[0]?.n ?? 0), shipped: shipped.length };
}
