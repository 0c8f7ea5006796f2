/**
 * The store's two dialects stay one store: every table of the SQLite schema
 * (broker/store/schema.ts) is in the PostgreSQL schema (broker/store/pg/schema.ts)
 * with the same columns, nullability and primary key, and the PostgreSQL one
 * adds only the fleet's own tables. A column added to one and not the other
 * fails here.
 */
import { getTableConfig as pgConfig, PgTable } from "drizzle-orm/pg-core";
import { getTableConfig as sqliteConfig, SQLiteTable } from "drizzle-orm/sqlite-core";
import * as pgSchema from "../../broker/store/pg/schema.js";
import * as sqliteSchema from "../../broker/store/schema.js";

/** Tables only the fleet's store has. */
const FLEET_ONLY = [
  "artifact_blobs",
  "fleet_cap_audit",
  "fleet_hook_traces",
  "fleet_invocations",
  "fleet_versions",
  "hosts",
  "session_leases",
];

interface Shape {
  readonly columns: Record<string, { notNull: boolean; default: boolean }>;
  readonly primaryKey: string[];
}

function sqliteShapes(): Map<string, Shape> {
  const out = new Map<string, Shape>();
  for (const value of Object.values(sqliteSchema)) {
    if (!(value instanceof SQLiteTable)) continue;
    const c = sqliteConfig(value);
    const pk = c.primaryKeys.flatMap((k) => k.columns.map((col) => col.name));
    out.set(c.name, {
      columns: Object.fromEntries(
        c.columns.map((col) => [col.name, { notNull: col.notNull, default: col.hasDefault }]),
      ),
      primaryKey: [...pk, ...c.columns.filter((col) => col.primary).map((col) => col.name)].sort(),
    });
  }
  return out;
}

function pgShapes(): Map<string, Shape> {
  const out = new Map<string, Shape>();
  for (const value of Object.values(pgSchema)) {
    if (!(value instanceof PgTable)) continue;
    const c = pgConfig(value);
    const pk = c.primaryKeys.flatMap((k) => k.columns.map((col) => col.name));
    out.set(c.name, {
      columns: Object.fromEntries(
        c.columns.map((col) => [col.name, { notNull: col.notNull, default: col.hasDefault }]),
      ),
      primaryKey: [...pk, ...c.columns.filter((col) => col.primary).map((col) => col.name)].sort(),
    });
  }
  return out;
}

test("the PostgreSQL schema has every SQLite table with the same columns and keys, and only the fleet's tables besides", () => {
  const lite = sqliteShapes();
  const pg = pgShapes();
  expect(lite.size).toBeGreaterThan(10);
  expect([...pg.keys()].filter((t) => !lite.has(t)).sort()).toEqual(FLEET_ONLY);
  for (const [table, shape] of lite) {
    // serial ids have a default in PostgreSQL (the sequence) that SQLite's rowid does not declare.
    const theirs = pg.get(table);
    expect({ table, columns: Object.keys(theirs?.columns ?? {}).sort(), primaryKey: theirs?.primaryKey }).toEqual({
      table,
      columns: Object.keys(shape.columns).sort(),
      primaryKey: shape.primaryKey,
    });
    for (const [name, col] of Object.entries(shape.columns)) {
      expect({ table, name, notNull: theirs!.columns[name]!.notNull }).toEqual({ table, name, notNull: col.notNull });
      if (col.default)
        expect({ table, name, default: theirs!.columns[name]!.default }).toEqual({ table, name, default: true });
    }
  }
});
