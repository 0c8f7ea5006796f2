/** The one-line summaries review will show for each pending migration (broker/registry/migration-summary.ts). */
import { splitStatements, summarizeMigration } from "../../broker/registry/migration-summary.js";

test.each([
  ["CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);", "creates table notes"],
  ['create table if not exists "notes" (x)', "creates table notes"],
  ["ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0", "adds column notes.pinned"],
  ["ALTER TABLE notes RENAME TO memos", "renames table notes to memos"],
  ["CREATE UNIQUE INDEX IF NOT EXISTS notes_by_day ON notes (day)", "creates index notes_by_day on notes"],
  ["DROP TABLE IF EXISTS old", "drops table old"],
  ["UPDATE notes SET pinned = 1 WHERE text LIKE '%!%'", "runs: UPDATE notes SET pinned = 1 WHERE text LIKE '%!%'"],
  ["-- only a comment\n", "does nothing"],
  ["CREATE TABLE a (x); -- a; b\nCREATE INDEX a_x ON a (x);", "creates table a; creates index a_x on a"],
])("%s → %s", (sql, summary) => {
  expect(summarizeMigration(sql)).toBe(summary);
});

test("a ';' inside a string does not split the statement; a long one is cut at 80 characters", () => {
  expect(splitStatements("INSERT INTO t VALUES ('a;b'); SELECT 1")).toEqual([
    "INSERT INTO t VALUES ('a;b')",
    "SELECT 1",
  ]);
  expect(summarizeMigration(`INSERT INTO t VALUES ('${"x".repeat(200)}')`)).toHaveLength("runs: ".length + 80);
});
