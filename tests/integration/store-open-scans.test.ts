/**
 * What every command pays before it serves (a broker's open, a session's open, its first call, the
 * closes) must not grow with the history a home keeps: no statement run on that path may read a
 * table that grows with use (the ledger's rows, the audit, the hooks' traces, extension data, folds,
 * session records) by scanning it whole. Each statement prepared on the path is asked for its query
 * plan on the same database, so a statement added later is checked too. Found: the ledger's look for
 * rows left `running` scanned every invocation at each open (~35 ms of `tether mcp`'s start at
 * 250,000 rows).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { Session } from "../../broker/sessions/session.js";
import { SessionRecords } from "../../broker/sessions/session-records.js";
import { envOptions } from "../support/env-options.js";

/** The tables whose rows grow as a home is used. */
const GROWING = ["invocations", "cap_audit", "hook_traces", "kv", "session_kv", "folds", "sessions"];

/** The plan's lines that read a growing table whole (SQLite says `SCAN <table>`, with no index after it). */
function wholeScans(db: Database.Database, sql: string): string[] {
  // The statement's parameters are bound as nulls: the plan does not depend on their values.
  for (let params = 0; params <= 64; params++) {
    try {
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array(params).fill(null)) as { detail: string }[];
      return plan
        .map((row) => row.detail)
        .filter((detail) => {
          const scanned = /^SCAN (\w+)(?: AS \w+)?$/.exec(detail)?.[1];
          return scanned !== undefined && GROWING.includes(scanned);
        });
    } catch (err) {
      if (!/Too few parameter|Too many parameter/i.test((err as Error).message)) throw err;
    }
  }
  throw new Error(`could not bind the parameters of: ${sql}`);
}

test("no statement of a broker's open, a session's open, a call or the closes scans a table that grows", async () => {
  const home = mkdtempSync(join(tmpdir(), "tether-open-scans-"));
  const prepared = new Set<string>();
  const prepare = Database.prototype.prepare;
  Database.prototype.prepare = function (this: Database.Database, sql: string) {
    prepared.add(sql);
    return prepare.call(this, sql);
  } as typeof prepare;
  let db: Database.Database | null = null;
  try {
    // Installed and approved in a first broker, as a home is before the command that is measured.
    const setup = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
    await setup.registry.install(resolve("manifests/echo"));
    setup.registry.approve("echo");
    await setup.close();
    prepared.clear();

    const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
    // As `tether mcp` opens one: its saved record first.
    expect(new SessionRecords(broker.store).get("s1")).toBeNull();
    const session = await Session.open(broker, { id: "s1", workspace: home });
    expect((await session.callTool("echo", '{"text":"hi"}')).outcome.ok).toBe(true);
    await session.close();
    await broker.close();
    Database.prototype.prepare = prepare;

    db = new Database(join(home, "tether.db"), { readonly: true });
    const reads = [...prepared].filter((sql) => /^\s*(select|with|update|delete)\b/i.test(sql));
    // The path does read the ledger (else this test checks nothing).
    expect(reads.some((sql) => /\binvocations\b/.test(sql))).toBe(true);
    const scans = reads.flatMap((sql) => wholeScans(db!, sql).map((detail) => `${detail}: ${sql}`));
    expect(scans).toEqual([]);
  } finally {
    Database.prototype.prepare = prepare;
    db?.close();
    rmSync(home, { recursive: true, force: true });
  }
});
