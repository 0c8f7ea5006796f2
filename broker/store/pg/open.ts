/**
 * Opens the fleet's shared store: a PostgreSQL database (docs/fleet.md),
 * its migrations from drizzle-pg/ applied at open under an advisory lock, so
 * brokers opening it at once apply each migration once.
 */
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import * as schema from "./schema.js";

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

export async function openPgStore(url: string, options: { connectTimeoutMs?: number } = {}): Promise<PgStore> {
  const pool = new pg.Pool({ connectionString: url, max: 8, connectionTimeoutMillis: options.connectTimeoutMs ?? 5000 });
  pool.on("error", () => {}); // an idle client's failure is seen by the next query
  try {
    const client = await pool.connect();
    try {
      await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
      try {
        await migrate(drizzle(client, { schema }), { migrationsFolder: pgMigrationsFolder() });
      } finally {
        await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]);
      }
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end();
    throw err;
  }
  return { pool, orm: drizzle(pool, { schema }), shown: shownUrl(url), close: () => pool.end() };
}
