/**
 * Hostile SQL against an extension's own database (broker/store/sql-allowlist.ts,
 * ext-db.ts, ext-migrations.ts), each class probed in many spellings:
 *
 * - a PRAGMA write spelled as a call, `PRAGMA user_version(7)`: it forged the
 *   number the broker reads to know which migrations the database has;
 * - a pragma's table-valued function, `SELECT * FROM pragma_optimize(…)`: it
 *   ran ANALYZE (a refused statement) from inside a "select", and
 *   `pragma_database_list` told the extension the broker's home;
 * - a temp table (`CREATE TEMP TABLE`, `CREATE TABLE temp.x`): not counted
 *   by the quota at all;
 * - a migration's `--` or `/*` inside a string literal: the broker split the
 *   comment-stripped text and ran *that*, so the statements that ran were not
 *   the text review showed (a string could hide a statement);
 * - the audit's target (what `cap_call` hooks judge): `WITH x AS (SELECT 1
 *   FROM harmless) DELETE FROM secrets` was `with harmless`, so a hook
 *   refusing `delete secrets` never saw it.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { checkStatement } from "../../broker/store/sql-allowlist.js";
import { dbFile, runStatement } from "../../broker/store/ext-db.js";
import { runMigrations } from "../../broker/store/ext-migrations.js";
import { DbProcesses, runMigrationsBounded } from "../../broker/store/db-processes.js";
import { splitStatements, summarizeMigration } from "../../broker/registry/migration-summary.js";

let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "tether-sqlatk-"));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const QUOTA = 65_536;
const run = (mode: "query" | "exec", sql: string) => runStatement(home, "x", QUOTA, mode, sql);
const statSize = (): number => statSync(dbFile(home, "x")).size;
const userVersion = (): number => {
  if (!existsSync(dbFile(home, "x"))) return 0;
  const db = new Database(dbFile(home, "x"), { readonly: true });
  try {
    return db.pragma("user_version", { simple: true }) as number;
  } finally {
    db.close();
  }
};

describe("a pragma write in any spelling is refused", () => {
  test.each([
    "PRAGMA user_version(7)",
    "PRAGMA main.user_version(7)",
    "pragma USER_VERSION ( 7 )",
    "PRAGMA user_version('7')",
    'PRAGMA user_version("7")',
    "PRAGMA user_version([7])",
    "PRAGMA main . user_version(7);",
    "/* x */ PRAGMA user_version(7) -- y",
    "PRAGMA user_version = 7",
    'PRAGMA "user_version" = 7',
    "PRAGMA 'user_version' = 7",
    "PRAGMA main.writable_schema = 1",
    "PRAGMA writable_schema(1)",
    "PRAGMA temp.user_version(7)",
    "PRAGMA table_info = notes",
    "PRAGMA table_info(notes) = 1",
  ])("%s", (sql) => {
    const c = checkStatement(sql);
    expect(c).toMatchObject({ ok: false, rule: "storage.pragma" });
    run("exec", sql);
    expect(userVersion()).toBe(0);
  });

  test("reading stays allowed", () => {
    expect(checkStatement("PRAGMA user_version")).toMatchObject({ ok: true });
    expect(checkStatement("PRAGMA main.user_version;")).toMatchObject({ ok: true });
    expect(checkStatement("PRAGMA table_info(notes)")).toMatchObject({ ok: true });
    expect(checkStatement('PRAGMA index_list("notes")')).toMatchObject({ ok: true });
    expect(checkStatement("SELECT * FROM pragma_table_info('notes')")).toMatchObject({ ok: true });
    expect(checkStatement("SELECT user_version FROM pragma_user_version")).toMatchObject({ ok: true });
  });
});

describe("a pragma's table-valued function is a pragma: only the readable ones", () => {
  test("pragma_optimize ran ANALYZE (a refused statement) from a select", () => {
    expect(run("exec", "CREATE TABLE t (a)").ok).toBe(true);
    expect(run("exec", "CREATE INDEX t_a ON t (a)").ok).toBe(true);
    expect(run("exec", "INSERT INTO t SELECT value FROM json_each('[1,2,3,4,5,6,7,8]')").ok).toBe(true);
    run("query", "SELECT * FROM pragma_optimize(0x10002)");
    const names = run("query", "SELECT name FROM sqlite_master");
    expect(names.ok && (names.value as { name: string }[]).map((r) => r.name)).toEqual(["t", "t_a"]);
  });

  test.each([
    "SELECT * FROM pragma_optimize(0x10002)",
    "SELECT * FROM PRAGMA_OPTIMIZE",
    'SELECT * FROM "pragma_optimize"(65538)',
    "SELECT * FROM [pragma_optimize](65538)",
    "SELECT * FROM main.pragma_optimize",
    "SELECT * FROM pragma_database_list",
    "SELECT file FROM pragma_database_list WHERE name = 'main'",
    "WITH x AS (SELECT * FROM pragma_optimize) SELECT 1",
    "INSERT INTO t SELECT file FROM pragma_database_list",
    "CREATE VIEW v AS SELECT * FROM pragma_database_list",
    "CREATE TABLE c AS SELECT * FROM pragma_compile_options",
    "SELECT * FROM pragma_integrity_check",
    "SELECT * FROM pragma_function_list",
    "SELECT * FROM pragma_table_list",
  ])("%s is refused (rule storage.pragma)", (sql) => {
    expect(checkStatement(sql)).toMatchObject({ ok: false, rule: "storage.pragma" });
  });
});

describe("the temp schema is under the quota too", () => {
  test.each([
    "CREATE TEMP TABLE t AS SELECT randomblob(300000)",
    "CREATE TEMPORARY TABLE t AS SELECT randomblob(300000)",
    "CREATE TABLE temp.t AS SELECT randomblob(300000)",
    'CREATE TABLE "temp".t AS SELECT randomblob(300000)',
    "CREATE TEMP TABLE t AS WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 400) SELECT randomblob(1000) AS b FROM c",
  ])("%s", (sql) => {
    expect(run("exec", sql)).toMatchObject({ ok: false, rule: "storage.max_bytes" });
  });
});

describe("a migration runs the text review shows, statement by statement", () => {
  test("a '--' inside a string does not turn the rest of the line into a comment", () => {
    // As SQLite (and a reviewer) reads it: one SELECT of two strings. Split from its comment-stripped text, it was two statements, the second a DROP.
    const text = "CREATE TABLE keep (x);\nSELECT printf('a--',\n'); DROP TABLE keep; --');\n";
    expect(splitStatements(text)).toEqual(["CREATE TABLE keep (x)", "SELECT printf('a--',\n'); DROP TABLE keep; --')"]);
    expect(summarizeMigration(text)).not.toMatch(/drops/);
    runMigrations(home, "x", QUOTA, [{ number: 1, name: "0001_x.sql", text }]);
    const db = new Database(dbFile(home, "x"), { readonly: true });
    try {
      expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'keep'").all()).toEqual([{ name: "keep" }]);
    } finally {
      db.close();
    }
  });

  test.each([
    ["INSERT INTO t VALUES ('--');", ["INSERT INTO t VALUES ('--')"]],
    [
      "INSERT INTO t VALUES ('/*'); INSERT INTO t VALUES ('*/');",
      ["INSERT INTO t VALUES ('/*')", "INSERT INTO t VALUES ('*/')"],
    ],
    ['CREATE TABLE "a--b" (x); SELECT 1', ['CREATE TABLE "a--b" (x)', "SELECT 1"]],
    ["CREATE TABLE [a/*b] (x); SELECT 1", ["CREATE TABLE [a/*b] (x)", "SELECT 1"]],
    ["CREATE TABLE [a;b] (x); SELECT 1", ["CREATE TABLE [a;b] (x)", "SELECT 1"]],
    ["INSERT INTO t VALUES ('it''s; fine'); SELECT 1", ["INSERT INTO t VALUES ('it''s; fine')", "SELECT 1"]],
    ["-- lead\nCREATE TABLE t (x); -- tail", ["-- lead\nCREATE TABLE t (x)"]],
    ["SELECT 1 /* ; */ ; SELECT 2", ["SELECT 1 /* ; */", "SELECT 2"]],
  ])("%j splits as SQLite reads it", (text, want) => {
    expect(splitStatements(text)).toEqual(want);
  });

  test("a string still cannot hide a refused statement from the allowlist", () => {
    for (const text of [
      "SELECT '--'; ATTACH 'x' AS y",
      "SELECT '/*'; PRAGMA user_version(9); SELECT '*/'",
      "SELECT \"--\"\n; VACUUM INTO '/tmp/x'",
    ]) {
      const refused = splitStatements(text)
        .map(checkStatement)
        .filter((c) => !c.ok);
      expect(refused.length).toBeGreaterThan(0);
    }
  });
});

describe("the audit's kind and table (what cap_call hooks see) name the statement that runs", () => {
  test.each([
    ["WITH x AS (SELECT 1 FROM harmless) DELETE FROM secrets", "delete", "secrets"],
    ["WITH x AS (SELECT 1) INSERT INTO secrets SELECT * FROM x", "insert", "secrets"],
    ["WITH x AS (SELECT 1) REPLACE INTO secrets SELECT * FROM x", "replace", "secrets"],
    ["with x as (select ')' from harmless) update secrets set a = 1", "update", "secrets"],
    ['WITH "a(" AS (SELECT 1 FROM harmless) DELETE FROM secrets', "delete", "secrets"],
    ["WITH replace AS (SELECT 1 FROM harmless) DELETE FROM secrets", "delete", "secrets"],
    [
      "WITH a AS (SELECT 1), b AS MATERIALIZED (SELECT 2 FROM harmless) DELETE FROM secrets WHERE 1",
      "delete",
      "secrets",
    ],
    ["WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 3) SELECT * FROM c", "select", "c"],
    ["WITH x AS (SELECT 1 FROM harmless) /* ) delete */ DELETE FROM secrets", "delete", "secrets"],
    ["SELECT 'from harmless' FROM secrets", "select", "secrets"],
    ["DELETE FROM secrets WHERE a = 'from harmless'", "delete", "secrets"],
  ])("%s → %s %s", (sql, kind, table) => {
    expect(checkStatement(sql)).toEqual({ ok: true, kind, table });
  });
});

describe("held: the main schema's quota in every way of growing it", () => {
  const grow: Array<[string, string[]]> = [
    ["one big blob", ["CREATE TABLE t (b)", "INSERT INTO t VALUES (randomblob(200000))"]],
    ["zeroblob (no memory, still pages)", ["CREATE TABLE t (b)", "INSERT INTO t VALUES (zeroblob(200000))"]],
    [
      "an index over many rows",
      [
        "CREATE TABLE t (b)",
        "INSERT INTO t SELECT hex(randomblob(100)) FROM (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 200) SELECT i FROM c)",
        "CREATE INDEX t_b ON t (b, b, b)",
      ],
    ],
    [
      "a table from a select",
      [
        "CREATE TABLE t AS WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 1000) SELECT randomblob(100) AS b FROM c",
      ],
    ],
    [
      "an fts index",
      [
        "CREATE VIRTUAL TABLE f USING fts5(x)",
        "INSERT INTO f SELECT group_concat(hex(randomblob(8)), ' ') FROM (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 8000) SELECT i FROM c)",
      ],
    ],
    [
      "an rtree",
      [
        "CREATE VIRTUAL TABLE r USING rtree(id, a, b)",
        "INSERT INTO r SELECT i, i, i + 1 FROM (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 20000) SELECT i FROM c)",
      ],
    ],
    [
      "a view's worth of rows inserted",
      [
        "CREATE TABLE t (b)",
        "CREATE VIEW v AS WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 2000) SELECT randomblob(64) AS b FROM c",
        "INSERT INTO t SELECT b FROM v",
      ],
    ],
  ];
  test.each(grow)("%s", (_what, statements) => {
    const results = statements.map((s) => run("exec", s));
    expect(results.at(-1)).toMatchObject({ ok: false, rule: "storage.max_bytes" });
    expect(statSize()).toBeLessThanOrEqual(QUOTA);
  });
});

describe("held: nothing reaches a file other than the extension's own database", () => {
  test.each([
    "ATTACH ':memory:' AS m",
    "/**/ATTACH 'other.sqlite' AS m",
    "-- x\n  attach database '../tether.db' as t",
    "\"ATTACH\" 'other.sqlite' AS m",
    "\uFF21TTACH 'other.sqlite' AS m",
    "WITH x AS (SELECT 1) ATTACH 'other.sqlite' AS m",
    "CREATE TABLE t (a); ATTACH 'other.sqlite' AS m",
    "CREATE TRIGGER tr AFTER INSERT ON t BEGIN ATTACH 'other.sqlite' AS m; END",
    "SELECT * FROM (SELECT sqlite_attach('other.sqlite', 'm', NULL))",
    "SELECT sqlite_detach('main')",
    "DETACH main",
    "VACUUM INTO 'copy.sqlite'",
    "vacuum main into 'copy.sqlite'",
    "SELECT load_extension('x')",
    "SELECT \"load_extension\"('x')",
    "SELECT readfile('/etc/passwd')",
    "SELECT writefile('copy.sqlite', 'x')",
    "SELECT edit('x')",
    "SELECT fts3_tokenizer('simple', x'0000000000000000')",
    "CREATE VIRTUAL TABLE d USING sqlite_dbpage",
    "SELECT * FROM sqlite_dbpage",
    "PRAGMA writable_schema = 1",
    "INSERT INTO sqlite_master VALUES ('table', 'z', 'z', 0, 'CREATE TABLE z (a)')",
    "UPDATE sqlite_schema SET sql = 'x'",
  ])("%s", (sql) => {
    const mode = /^\s*select/i.test(sql) ? "query" : "exec";
    expect(run(mode, sql).ok).toBe(false);
    expect(
      existsSync(join(home, "data", "copy.sqlite")) ||
        existsSync(join(home, "data", "other.sqlite")) ||
        existsSync("copy.sqlite"),
    ).toBe(false);
  });

  test("what follows a NUL is not run (SQLite reads up to it), and a view calling a missing function fails when used", () => {
    expect(run("exec", "CREATE TABLE z AS SELECT 1\u0000; VACUUM INTO 'copy.sqlite'").ok).toBe(true);
    expect(existsSync(join(home, "data", "copy.sqlite")) || existsSync("copy.sqlite")).toBe(false);
    expect(run("exec", "CREATE VIEW v AS SELECT sqlite_attach('other.sqlite', 'm', NULL) AS a").ok).toBe(true);
    expect(run("query", "SELECT * FROM v")).toMatchObject({ ok: false, rule: "storage.sql" });
    expect(existsSync(join(home, "data", "other.sqlite"))).toBe(false);
  });

  test("an fts or rtree shadow table is not writable (the connection is defensive)", () => {
    expect(run("exec", "CREATE VIRTUAL TABLE f USING fts3(x)").ok).toBe(true);
    expect(run("exec", "CREATE VIRTUAL TABLE g USING fts5(x)").ok).toBe(true);
    expect(run("exec", "CREATE VIRTUAL TABLE r USING rtree(id, a, b)").ok).toBe(true);
    for (const sql of [
      "UPDATE f_segdir SET root = x'00ff00ff'",
      "INSERT INTO f_segments VALUES (1, x'0102')",
      "UPDATE g_data SET block = x'ffffffff'",
      "INSERT INTO g_config VALUES ('pgsz', 1)",
      "UPDATE r_node SET data = x'ffff'",
    ]) {
      expect(run("exec", sql)).toMatchObject({ ok: false, rule: "storage.sql" });
    }
  });
});

// The memory class: in the broker's own process SQLite's default limits let one
// call allocate values of up to 1 GB whatever max_bytes says, and a sort spill
// to temp files the quota does not count. Statements therefore run in a
// database process per extension (broker/store/db-processes.ts) under a data
// limit (RLIMIT_DATA: SQLite answers "out of memory"), with temporary results
// kept in memory rather than in files.
test("in a database process, a statement asking SQLite for gigabytes is refused by its data limit", async () => {
  const dbs = new DbProcesses(home);
  try {
    const r = await dbs.run(
      "x",
      QUOTA,
      "query",
      "SELECT length(randomblob(400000000)) + length(randomblob(400000000)) AS n",
      undefined,
      Date.now() + 30_000,
    );
    expect(r).toMatchObject({ ok: false, rule: "storage.sql" });
    expect(r.ok ? "" : r.msg).toMatch(/out of memory|too big/);
  } finally {
    dbs.close();
  }
});

test("a migration that never ends is stopped at its time limit and leaves the database as it was", () => {
  let failure: Error | null = null;
  try {
    runMigrationsBounded(
      home,
      "x",
      QUOTA,
      [
        {
          number: 1,
          name: "0001_x.sql",
          text: "CREATE TABLE t (x);\nWITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c;",
        },
      ],
      () => {},
      {},
      1500,
    );
  } catch (err) {
    failure = err as Error;
  }
  expect(failure?.message).toBe("migration 0001_x.sql failed: it ran past 1.5 s and was stopped");
  expect(run("query", "SELECT name FROM sqlite_master")).toMatchObject({ ok: true, value: [] });
});
