/**
 * Migrations (docs/migrations.md) over a real broker home and real
 * jailed satellites: shipped in `migrations/`, pinned by the artifact, shown
 * at review, applied in order when the version is approved (recorded, the
 * database's user_version moved in the same transaction), kept across an
 * upgrade; a failing migration rolls back whole and records no approval; an
 * edited or missing one, and a version that ships fewer, refuse the approval
 * before anything runs; the text that runs is the installed one, not the
 * folder's as it is now; the quota holds.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { dbFile } from "../../broker/store/ext-db.js";
import { reviewOutput } from "../../broker/operator/review.js";
import { overview } from "../../broker/operator/status.js";
import { renderOverview } from "../../broker/cli/status.js";
import { purgeExtensionData } from "../../broker/store/extension-data.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const FIXTURE = join(REPO, "tests/integration/fixtures/notebook");
const EXT = "notebook";

let tmp: string;
let broker: Broker;
let dir: string;

/** Writes the folder as version `version` with exactly these migrations. */
function writeVersion(version: string, migrations: Record<string, string>): void {
  rmSync(join(dir, "migrations"), { recursive: true, force: true });
  const manifest = readFileSync(join(FIXTURE, "manifest.toml"), "utf8").replace(
    'version = "1.0.0"',
    `version = "${version}"`,
  );
  writeFileSync(join(dir, "manifest.toml"), manifest);
  if (Object.keys(migrations).length === 0) return;
  mkdirSync(join(dir, "migrations"));
  for (const [name, sql] of Object.entries(migrations)) writeFileSync(join(dir, "migrations", name), sql);
}

const V1 = {
  "0001_notes.sql":
    "-- the notes\nCREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);\nCREATE INDEX notes_by_body ON notes (body);\n",
};
const V2 = { ...V1, "0002_pinned.sql": "ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;\n" };

function userVersion(): number {
  const db = new Database(dbFile(broker.home, EXT), { readonly: true });
  try {
    return db.pragma("user_version", { simple: true }) as number;
  } finally {
    db.close();
  }
}
function tables(): string[] {
  const db = new Database(dbFile(broker.home, EXT), { readonly: true });
  try {
    return (
      db.prepare("select name from sqlite_master where type = 'table' order by name").all() as { name: string }[]
    ).map((r) => r.name);
  } finally {
    db.close();
  }
}
const recorded = () =>
  broker.store.sqlite
    .prepare("select number, name, version from extension_migrations where extension = ? order by number")
    .all(EXT);

async function sql(tool: "exec" | "query", text: string, params?: unknown): Promise<Record<string, unknown>> {
  const outcome = await broker.callTool(
    EXT,
    tool,
    JSON.stringify(params === undefined ? { sql: text } : { sql: text, params }),
    { session: "default" },
  );
  if (!outcome.ok) throw new Error(`${tool} failed: ${outcome.error.code}: ${outcome.error.msg}`);
  const block = outcome.value.content.find((c) => c.type === "json");
  return (block as { json: Record<string, unknown> }).json;
}

function approveError(): Error & { code?: string } {
  try {
    broker.registry.approve(EXT);
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error("the approval went through");
}

beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), "tether-migrations-"));
  broker = Broker.open({
    ...envOptions(),
    home: join(tmp, "home"),
    log: createLogger({ level: "warn", sink: () => {} }),
  });
  dir = join(tmp, "src", EXT);
  cpSync(FIXTURE, dir, { recursive: true });
});

afterEach(async () => {
  await broker.close();
  rmSync(tmp, { recursive: true, force: true });
});

test("review shows each migration and its SQL; approving applies them in order, records them, and the extension uses the tables", async () => {
  writeVersion("1.0.0", V1);
  await broker.registry.install(dir);
  const { text } = reviewOutput(broker, EXT, false);
  expect(text).toContain(
    "Migrations: 1 shipped, the database has 0; approving runs 1 on it, in order, in one transaction (all or none):",
  );
  expect(text).toContain(
    "  0001_notes.sql — creates table notes; creates index notes_by_body on notes   [NEW: runs when approved]",
  );
  expect(text).toContain("      | CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);");

  const progress: string[] = [];
  broker.registry.approve(EXT, { progress: (line) => progress.push(line) });
  expect(progress).toEqual([
    "applying migration 0001_notes.sql: creates table notes; creates index notes_by_body on notes",
  ]);
  expect(userVersion()).toBe(1);
  expect(recorded()).toEqual([{ number: 1, name: "0001_notes.sql", version: "1.0.0" }]);
  expect(await sql("exec", "insert into notes (body) values (?)", ["first"])).toMatchObject({ ok: true, changes: 1 });
  expect(await sql("query", "select body from notes")).toEqual({ ok: true, rows: [{ body: "first" }] });
  expect(reviewOutput(broker, EXT, false).text).toContain(
    "  0001_notes.sql — creates table notes; creates index notes_by_body on notes   (applied by 1.0.0)",
  );
  // Approving the same install again runs nothing.
  broker.registry.approve(EXT, { progress: (line) => progress.push(line) });
  expect(progress).toHaveLength(1);
  expect(renderOverview(await overview(broker))).toMatch(
    /storage: kv 0 of \d+ bytes; db \d+ of 65536 bytes, 1 migration applied/,
  );
});

test("an upgrade applies only the new migration and keeps the data", async () => {
  writeVersion("1.0.0", V1);
  await broker.registry.install(dir);
  broker.registry.approve(EXT);
  await sql("exec", "insert into notes (body) values (?)", ["kept"]);
  writeVersion("1.1.0", V2);
  await broker.registry.install(dir);
  const { text } = reviewOutput(broker, EXT, false);
  expect(text).toContain("Migrations: 2 shipped, the database has 1; approving runs 1 on it");
  expect(text).toContain(
    "  0001_notes.sql — creates table notes; creates index notes_by_body on notes   (applied by 1.0.0)",
  );
  expect(text).toContain("  0002_pinned.sql — adds column notes.pinned   [NEW: runs when approved]");
  expect(text).toContain("files that differ: manifest.toml (changed), migrations/0002_pinned.sql (added)");
  broker.registry.approve(EXT);
  expect(userVersion()).toBe(2);
  expect(await sql("query", "select body, pinned from notes")).toEqual({
    ok: true,
    rows: [{ body: "kept", pinned: 0 }],
  });
  expect(recorded()).toEqual([
    { number: 1, name: "0001_notes.sql", version: "1.0.0" },
    { number: 2, name: "0002_pinned.sql", version: "1.1.0" },
  ]);
});

test("a failing migration rolls back every statement of every pending migration and records no approval", async () => {
  writeVersion("1.0.0", V1);
  await broker.registry.install(dir);
  const first = broker.registry.approve(EXT);
  await sql("exec", "insert into notes (body) values (?)", ["safe"]);
  writeVersion("2.0.0", {
    ...V2,
    "0003_broken.sql":
      "CREATE TABLE extra (x INTEGER);\nINSERT INTO extra VALUES (1);\nALTER TABLE missing ADD COLUMN y TEXT;\n",
  });
  await broker.registry.install(dir);
  const err = approveError();
  expect(err.code).toBe("migration_failed");
  expect(err.message).toBe(
    `Cannot approve '${EXT}' 2.0.0: migration 0003_broken.sql failed at statement 3 (ALTER TABLE missing ADD COLUMN y TEXT): no such table: missing. ` +
      `Nothing was applied (the database is as it was, at migration 1) and the approval was not recorded; fix the migration, then tether install ${dir} and approve again`,
  );
  expect(userVersion()).toBe(1);
  expect(tables()).toEqual(["notes"]);
  expect(broker.registry.latestApproval(EXT)!.id).toBe(first.id);
  expect(broker.registry.status(broker.registry.require(EXT))).toBe("changed");
  expect(recorded()).toHaveLength(1);
  // Fixed and reinstalled: it goes through, and the data is there.
  writeVersion("2.0.1", { ...V2, "0003_broken.sql": "CREATE TABLE extra (x INTEGER);\n" });
  await broker.registry.install(dir);
  broker.registry.approve(EXT);
  expect(userVersion()).toBe(3);
  expect(tables()).toEqual(["extra", "notes"]);
  expect(await sql("query", "select body, pinned from notes")).toEqual({
    ok: true,
    rows: [{ body: "safe", pinned: 0 }],
  });
});

test("an applied migration edited, or a version that ships fewer, is refused before anything runs; review says why", async () => {
  writeVersion("1.0.0", V2);
  await broker.registry.install(dir);
  broker.registry.approve(EXT);
  writeVersion("1.0.1", {
    ...V2,
    "0002_pinned.sql": "ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 1;\n",
    "0003_more.sql": "CREATE TABLE more (x);\n",
  });
  await broker.registry.install(dir);
  const edited = approveError();
  expect(edited.message).toContain(
    "migrations/0002_pinned.sql changed since it was applied (by 1.0.0's approval): a migration is never edited once applied; restore it and put the change in a new migration (0004_….sql)",
  );
  expect(reviewOutput(broker, EXT, false).text).toContain(
    "  ! approving is refused: migrations/0002_pinned.sql changed since it was applied",
  );
  expect(tables()).toEqual(["notes"]);

  writeVersion("0.9.0", V1);
  await broker.registry.install(dir);
  expect(approveError().message).toContain(
    "its database has 2 migrations but this version ships 1: a migration is never undone",
  );
  expect(userVersion()).toBe(2);
});

test("the text that runs is the one installed (pinned by the artifact), not the folder's as it is at approval", async () => {
  writeVersion("1.0.0", V1);
  await broker.registry.install(dir);
  writeFileSync(join(dir, "migrations", "0001_notes.sql"), "CREATE TABLE sneaky (x);\n");
  broker.registry.approve(EXT);
  expect(tables()).toEqual(["notes"]);
  // The artifact names the migration by hash: its last line.
  const code = readFileSync(broker.registry.require(EXT).artifactPath, "utf8");
  expect(code.trimEnd().split("\n").at(-1)).toMatch(
    /^\/\/ tether-migrations: \[\{"name":"0001_notes.sql","sha256":"[0-9a-f]{64}"\}\]$/,
  );
});

test("a migration that grows the database past [storage] max_bytes fails with the quota and rolls back", async () => {
  writeVersion("1.0.0", {
    ...V1,
    "0002_fill.sql":
      "CREATE TABLE blob_rows (b BLOB);\nWITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) INSERT INTO blob_rows SELECT randomblob(1024) FROM n;\n",
  });
  await broker.registry.install(dir);
  expect(approveError().message).toContain(
    "migration 0002_fill.sql failed at statement 2 (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) IN): the database would grow past its quota of 65536 bytes ([storage] max_bytes)",
  );
  expect(userVersion()).toBe(0);
  expect(tables()).toEqual([]);
  expect(broker.registry.latestApproval(EXT)).toBeNull();
});

test("a purge forgets what was applied: the next approval runs every migration on the new database", async () => {
  writeVersion("1.0.0", V1);
  await broker.registry.install(dir);
  broker.registry.approve(EXT);
  purgeExtensionData(broker.store, broker.home, EXT);
  expect(recorded()).toEqual([]);
  broker.registry.approve(EXT);
  expect(userVersion()).toBe(1);
  expect(tables()).toEqual(["notes"]);
});
