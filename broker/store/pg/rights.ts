/**
 * The rights the brokers' role needs on the fleet's store (docs/fleet.md#roles),
 * checked when a store is opened: what is missing is named — the right, the
 * table or sequence, and the GRANT that gives it — rather than met later as a
 * bare "permission denied" in the middle of a call or a shipment.
 */
import { getTableName, is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import type pg from "pg";
import * as schema from "./schema.js";

/** Where the rights are explained. */
export const ROLES_DOC = "docs/fleet.md#roles";

/** The tables the broker reads and writes: every table of the PostgreSQL schema. */
export const FLEET_TABLES: readonly string[] = (Object.values(schema) as unknown[])
  .filter((v): v is PgTable => is(v, PgTable))
  .map((t) => getTableName(t))
  .sort();

const DATA_RIGHTS = ["SELECT", "INSERT", "UPDATE", "DELETE"] as const;

export interface MissingRight {
  /** SELECT, INSERT, UPDATE, DELETE or USAGE. */
  readonly right: string;
  readonly kind: "table" | "sequence" | "schema";
  readonly name: string;
}

/** A store whose role lacks rights the fleet needs: the message names each, and the GRANTs. */
export class StoreRightsError extends Error {
  constructor(
    readonly role: string,
    readonly missing: readonly MissingRight[],
  ) {
    super(rightsMessage(role, missing));
    this.name = "StoreRightsError";
  }
}

const ident = (name: string): string => (/^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`);

export function rightsMessage(role: string, missing: readonly MissingRight[]): string {
  const named = missing.map((m) => `${m.right} on ${m.kind} ${m.name}`).join(", ");
  // One GRANT per object, its rights together.
  const byObject = new Map<string, string[]>();
  for (const m of missing) {
    const key = `${m.kind.toUpperCase()} ${ident(m.name)}`;
    byObject.set(key, [...(byObject.get(key) ?? []), m.right]);
  }
  const grants = [...byObject]
    .map(([object, rights]) => `GRANT ${rights.join(", ")} ON ${object} TO ${ident(role)};`)
    .join(" ");
  return (
    `role ${role} lacks ${named}: an administrator ` +
    `grants ${missing.length === 1 ? "it" : "them"} (${grants} ${ROLES_DOC})`
  );
}

/**
 * The rights of docs/fleet.md#roles that the connected role lacks
 * on the fleet's tables and sequences (none for their owner).
 */
export async function missingRights(
  client: pg.Pool | pg.PoolClient,
): Promise<{ role: string; missing: MissingRight[] }> {
  // By oid, from the catalogs (readable by every role): naming a table in a schema without USAGE would itself fail.
  const { rows } = await client.query<{
    role: string;
    right: string;
    kind: "table" | "sequence" | "schema";
    name: string;
    ok: boolean;
  }>(
    `SELECT current_user AS role, r.* FROM (
       SELECT 'USAGE' AS right, 'schema' AS kind, 'public' AS name, has_schema_privilege('public', 'USAGE') AS ok
       UNION ALL
       SELECT p.pr, 'table', c.relname, has_table_privilege(c.oid, p.pr)
         FROM pg_class c CROSS JOIN unnest($2::text[]) AS p(pr)
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND c.relname = ANY($1::text[])
       UNION ALL
       SELECT 'USAGE', 'sequence', c.relname, has_sequence_privilege(c.oid, 'USAGE')
         FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'S'
     ) r`,
    [FLEET_TABLES, DATA_RIGHTS],
  );
  const role = rows[0]?.role ?? "?";
  const order = (m: { kind: string; name: string; right: string }) =>
    `${m.kind === "schema" ? 0 : m.kind === "table" ? 1 : 2}:${m.name}:${DATA_RIGHTS.indexOf(m.right as never)}`;
  const missing = rows
    .filter((r) => !r.ok)
    .map((r) => ({ right: r.right, kind: r.kind, name: r.name }))
    .sort((x, y) => (order(x) < order(y) ? -1 : order(x) > order(y) ? 1 : 0));
  return { role, missing };
}

/** A PostgreSQL error's SQLSTATE, also through drizzle's wrapper (its `cause`). */
export function pgCode(err: unknown): string | undefined {
  for (
    let e: unknown = err, depth = 0;
    e !== null && typeof e === "object" && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** The innermost PostgreSQL message (drizzle's wrapper repeats the whole query). */
export function pgMessage(err: unknown): string {
  for (
    let e: unknown = err, depth = 0;
    e !== null && typeof e === "object" && depth < 4;
    e = (e as { cause?: unknown }).cause, depth++
  ) {
    if (typeof (e as { code?: unknown }).code === "string" && e instanceof Error) return e.message;
  }
  return err instanceof Error ? err.message : String(err);
}

/** SQLSTATE 42501: insufficient_privilege. */
export const INSUFFICIENT_PRIVILEGE = "42501";

/**
 * An error met while using the store, for a log line: PostgreSQL's own words
 * (which name the table, never the password), and when it is a right the role
 * lacks, where the rights are explained.
 */
export function explainPgError(err: unknown): string {
  const message = pgMessage(err);
  return pgCode(err) === INSUFFICIENT_PRIVILEGE
    ? `${message}: the store's role lacks a right the fleet needs (${ROLES_DOC})`
    : message;
}
