/**
 * An extension's own database (broker/store/ext-db.ts, sql-allowlist.ts): the
 * allowlist refuses what reaches past the file or changes how SQLite runs,
 * each with its rule; the quota is SQLite's own refusal; rows are bounded;
 * the file is 0600.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkStatement } from "../../broker/store/sql-allowlist.js";
import { dbFile, dbSize, MAX_ROWS, runStatement } from "../../broker/store/ext-db.js";

let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "tether-extdb-"));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

const MB = 1_048_576;
const run = (mode: "query" | "exec", sql: string, params?: unknown[], max = MB) =>
  runStatement(home, "notes", max, mode, sql, params as never);

describe("the statement allowlist", () => {
  test.each([
    ["ATTACH DATABASE '/etc/x' AS x", "storage.attach"],
    ["detach x", "storage.attach"],
    ["SELECT load_extension('/tmp/evil.so')", "storage.load_extension"],
    ["SELECT '--', load_extension('/tmp/evil.so')", "storage.load_extension"],
    ["PRAGMA writable_schema = ON", "storage.pragma"],
    ["PRAGMA journal_mode", "storage.pragma"],
    ["PRAGMA user_version = 3", "storage.pragma"],
    ["VACUUM INTO '/tmp/copy.sqlite'", "storage.vacuum"],
    ["/* hi */ BEGIN", "storage.statement"],
    ["-- x\nattach 'y' as y", "storage.attach"],
  ])("%s is refused (rule %s)", (sql, rule) => {
    const c = checkStatement(sql);
    expect(c.ok).toBe(false);
    if (!c.ok) expect(c.rule).toBe(rule);
  });

  test.each([
    ["SELECT id FROM notes WHERE id = ?", "select", "notes"],
    ['insert into "notes" (text) values (?)', "insert", "notes"],
    ["UPDATE OR IGNORE notes SET text = ?", "update", "notes"],
    ["DELETE FROM notes", "delete", "notes"],
    ["CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY)", "create", "notes"],
    ["PRAGMA table_info(notes)", "pragma", "table_info"],
    ["PRAGMA user_version", "pragma", "user_version"],
  ])("%s is allowed as %s %s", (sql, kind, table) => {
    expect(checkStatement(sql)).toEqual({ ok: true, kind, table });
  });
});

describe("runStatement", () => {
  test("creates the 0600 file, runs exec and query with bound values, bytes and all", () => {
    expect(run("exec", "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT, blob BLOB)")).toMatchObject({
      ok: true,
      kind: "create",
      table: "notes",
    });
    expect(run("exec", "INSERT INTO notes (text, blob) VALUES (?, ?)", ["hi", new Uint8Array([1, 2])])).toMatchObject({
      ok: true,
      value: { changes: 1, lastInsertRowid: 1 },
    });
    const r = run("query", "SELECT text, blob FROM notes WHERE id = ?", [1]);
    expect(r).toMatchObject({
      ok: true,
      kind: "select",
      table: "notes",
      value: [{ text: "hi", blob: new Uint8Array([1, 2]) }],
    });
    expect(statSync(dbFile(home, "notes")).mode & 0o777).toBe(0o600);
    expect(dbSize(home, "notes")).toBeGreaterThan(0);
    expect(dbSize(home, "other")).toBeNull();
  });

  test("two statements are refused before either runs", () => {
    run("exec", "CREATE TABLE notes (id INTEGER PRIMARY KEY)");
    expect(run("exec", "INSERT INTO notes VALUES (1); DROP TABLE notes")).toMatchObject({
      ok: false,
      rule: "storage.one_statement",
    });
    expect(run("query", "SELECT count(*) AS n FROM notes")).toMatchObject({ ok: true, value: [{ n: 0 }] });
  });

  test("query wants rows, exec none; the defensive connection refuses sqlite_master writes", () => {
    expect(run("query", "CREATE TABLE t (x)")).toMatchObject({ ok: false, rule: "storage.statement" });
    expect(run("exec", "SELECT 1")).toMatchObject({ ok: false, rule: "storage.statement" });
    expect(run("exec", "DELETE FROM sqlite_master")).toMatchObject({ ok: false });
  });

  test("the quota is SQLite's refusal, rule storage.max_bytes", () => {
    run("exec", "CREATE TABLE blobs (b BLOB)", [], 65_536);
    let last = run("exec", "INSERT INTO blobs VALUES (zeroblob(10000))", [], 65_536);
    for (let i = 0; i < 20 && last.ok; i++)
      last = run("exec", "INSERT INTO blobs VALUES (zeroblob(10000))", [], 65_536);
    expect(last).toMatchObject({ ok: false, rule: "storage.max_bytes" });
    expect(dbSize(home, "notes")).toBeLessThanOrEqual(65_536);
  });

  test("more rows than the bound are refused with a hint", () => {
    const r = run(
      "query",
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${MAX_ROWS + 5}) SELECT i FROM n`,
    );
    expect(r).toMatchObject({ ok: false, rule: "storage.rows" });
  });
});
