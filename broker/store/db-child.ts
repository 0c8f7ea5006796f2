/**
 * An extension's database process: runs its statements, one at a time, off
 * the broker's thread (db-processes.ts). better-sqlite3 is synchronous and has
 * no interrupt, so a statement that runs long or allocates without bound
 * would stall or swell whatever process runs it; here it stalls only this one,
 * which the broker kills at the call's deadline, under a data limit the broker
 * set (db-processes.ts), with temporary results kept in memory
 * (`temp_store = MEMORY`, ext-db.ts) so no sort spills to files past it.
 *
 * `migrate` mode (after `--addon=`) runs one batch of migrations read from stdin and
 * exits (the broker waits for it with a time limit); `version` answers the
 * number of the last migration the database has; `fold` folds the WAL of
 * each SQLite file named into it (Deno's caches after a warm-up).
 *
 * It runs in the extension's database jail (db-processes.ts): Node, this
 * script, better-sqlite3's addon (`--addon=`), and the one database
 * file with its journal.
 */
import { createInterface } from "node:readline";
import { explainStatement, openExtensionDb, runStatement, type DbResult } from "./ext-db.js";
import { useSqliteAddon } from "./sqlite-addon.js";
import { foldWal } from "./sqlite-file.js";
import { decodeParams, encodeValue, type DbRequest } from "./db-wire.js";
import { MigrationFailure, runMigrations, userVersion, type MigrationText } from "./ext-migrations.js";

// The broker's command line: `--addon=PATH` (better-sqlite3's
// addon, at the jail's own path), then the mode and its files.
const ADDON = "--addon=";
const argv = process.argv.slice(2);
useSqliteAddon(argv.find((a) => a.startsWith(ADDON))?.slice(ADDON.length));
const [mode, ...names] = argv.filter((a) => !a.startsWith(ADDON));

/** The whole of stdin, then `run` with it parsed. */
function withInput(run: (job: Record<string, unknown>) => void): void {
  let input = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk: string) => (input += chunk));
  process.stdin.on("end", () => run(JSON.parse(input) as Record<string, unknown>));
}

function answer(id: number, result: DbResult): void {
  process.stdout.write(`${JSON.stringify({ id, result: encodeValue(result) })}\n`);
}

if (mode === "fold") {
  // Deno's cache files after a warm-up boot (jail/deno-cache.ts): each WAL folded into its file.
  for (const path of names) foldWal(path);
} else if (mode === "version") {
  withInput((job) => {
    const db = openExtensionDb(String(job.home), String(job.extension), 2 ** 40);
    try {
      process.stdout.write(`${JSON.stringify({ version: userVersion(db) })}\n`);
    } finally {
      db.close();
    }
  });
} else if (mode === "migrate") {
  withInput((input) => {
    const job = input as unknown as { home: string; extension: string; maxBytes: number; pending: MigrationText[] };
    try {
      runMigrations(job.home, job.extension, job.maxBytes, job.pending, (m) =>
        process.stdout.write(`${JSON.stringify({ starting: m.number })}\n`),
      );
      process.stdout.write(`${JSON.stringify({ ok: true })}\n`);
    } catch (err) {
      const f = err instanceof MigrationFailure ? err : new MigrationFailure("?", 0, "", (err as Error).message);
      const failed = { ok: false, migration: f.migration, statement: f.statement, sql: f.sql, reason: f.reason };
      process.stdout.write(`${JSON.stringify(failed)}\n`);
    }
  });
} else {
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (line) => {
    const request = JSON.parse(line) as DbRequest;
    let result: DbResult;
    try {
      result =
        request.mode === "explain"
          ? explainStatement(
              request.home,
              request.extension,
              request.maxBytes,
              request.sql,
              decodeParams(request.params),
            )
          : runStatement(
              request.home,
              request.extension,
              request.maxBytes,
              request.mode,
              request.sql,
              decodeParams(request.params),
              request.unchecked === true,
            );
    } catch (err) {
      result = {
        ok: false,
        kind: "refused",
        table: "",
        rule: "storage.sql",
        msg: `db.${request.mode}: ${(err as Error).message.slice(0, 200)}`,
      };
    }
    answer(request.id, result);
  });
  lines.on("close", () => process.exit(0));
}
