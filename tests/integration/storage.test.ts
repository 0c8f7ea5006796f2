/**
 * An extension's own database (docs/storage.md), over a real broker and real
 * jailed satellites: db.exec and db.query round-trip with bound values, each
 * statement outside the allowlist is refused with its rule before it runs,
 * the quota is refused with `storage.max_bytes`, the audit rows name the
 * statement's kind and table and never a value, the file is 0600, and an
 * extension without an approved `[storage]` is refused with `storage`.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import type { CapCallEvent } from "../../broker/caps/dispatcher.js";
import { createLogger } from "../../broker/base/log.js";
import { dbFile } from "../../broker/store/ext-db.js";
import { overview } from "../../broker/operator/status.js";
import { renderOverview } from "../../broker/cli/status.js";
import { runUninstall } from "../../broker/operator/uninstall.js";
import { reviewOutput } from "../../broker/operator/review.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const FIXTURE = join(REPO, "tests/integration/fixtures/notebook");
const EXT = "notebook";
/** The same code with no `[storage]`. */
const BARE = "notebook-bare";

type Reply = { ok: true; [field: string]: unknown } | { ok: false; code: string; message: string };
interface AuditRow {
  readonly extension: string;
  readonly capability: string;
  readonly target: string;
  readonly decision: "allowed" | "denied";
  readonly rule: string;
}

let tmp: string;
let broker: Broker;
const hookEvents: CapCallEvent[] = [];

function lastAuditId(): number {
  broker.ledger.flush();
  return (broker.store.sqlite.prepare("select coalesce(max(id), 0) as id from cap_audit").get() as { id: number }).id;
}

async function call(
  ext: string,
  tool: "exec" | "query",
  sql: string,
  params?: unknown,
): Promise<{ reply: Reply; rows: AuditRow[] }> {
  const before = lastAuditId();
  const outcome = await broker.callTool(ext, tool, JSON.stringify(params === undefined ? { sql } : { sql, params }), {
    session: "default",
  });
  if (!outcome.ok) throw new Error(`${ext}/${tool} failed: ${outcome.error.code}: ${outcome.error.msg}`);
  const block = outcome.value.content.find((c) => c.type === "json");
  if (block === undefined) throw new Error(`${ext}/${tool} answered no JSON block`);
  broker.ledger.flush();
  const rows = broker.store.sqlite
    .prepare("select * from cap_audit where id > ? order by id")
    .all(before) as AuditRow[];
  return { reply: block.json as Reply, rows };
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-storage-"));
  broker = Broker.open({
    ...envOptions(),
    home: join(tmp, "home"),
    log: createLogger({ level: "warn", sink: () => {} }),
    capHooks: async (event) => (hookEvents.push(event), null),
  });
  const dir = join(tmp, "src", EXT);
  cpSync(FIXTURE, dir, { recursive: true });
  await broker.registry.install(dir);
  broker.registry.approve(EXT);
  const bare = join(tmp, "src", BARE);
  mkdirSync(join(tmp, "src"), { recursive: true });
  cpSync(FIXTURE, bare, { recursive: true });
  const manifest = readFileSync(join(bare, "manifest.toml"), "utf8")
    .replace(`name = "${EXT}"`, `name = "${BARE}"`)
    .replace(/\[storage\]\nmax_bytes = \d+\n/, "");
  writeFileSync(join(bare, "manifest.toml"), manifest);
  await broker.registry.install(bare);
  broker.registry.approve(BARE);
  expect(broker.registry.latestApproval(EXT)?.grants.storage).toEqual({ max_bytes: 65_536 });
  expect(broker.registry.latestApproval(BARE)?.grants.storage).toBeNull();
});

afterAll(async () => {
  await broker?.destroy();
  rmSync(tmp, { recursive: true, force: true });
});

test("db.exec and db.query round-trip bound values, bytes included, in a 0600 file; the audit names kind and table, never a value", async () => {
  const created = await call(EXT, "exec", "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT, blob BLOB)");
  expect(created.reply).toEqual({ ok: true, changes: 0, lastInsertRowid: 0 });
  expect(created.rows).toMatchObject([
    { capability: "db.exec", target: "create notes", decision: "allowed", rule: "builtin:db" },
  ]);
  const secret = "a value the audit must not hold";
  const inserted = await call(EXT, "exec", "INSERT INTO notes (text, blob) VALUES (:text, :blob)", {
    text: secret,
    blob: { bytes: [0, 255, 7] },
  });
  expect(inserted.reply).toEqual({ ok: true, changes: 1, lastInsertRowid: 1 });
  expect(inserted.rows).toMatchObject([{ capability: "db.exec", target: "insert notes", decision: "allowed" }]);
  const read = await call(EXT, "query", "SELECT id, text, blob FROM notes WHERE text = ?", [secret]);
  expect(read.reply).toEqual({ ok: true, rows: [{ id: 1, text: secret, blob: { bytes: [0, 255, 7] } }] });
  expect(read.rows).toMatchObject([{ capability: "db.query", target: "select notes", decision: "allowed" }]);
  broker.ledger.flush();
  const all = broker.store.sqlite.prepare("select target from cap_audit where extension = ?").all(EXT) as Array<{
    target: string;
  }>;
  expect(all.some((r) => r.target.includes(secret))).toBe(false);
  expect(statSync(dbFile(broker.home, EXT)).mode & 0o777).toBe(0o600);
});

test.each([
  ["exec", "ATTACH DATABASE '/etc/passwd' AS x", "storage.attach"],
  ["query", "SELECT load_extension('/tmp/evil.so')", "storage.load_extension"],
  ["exec", "PRAGMA writable_schema = ON", "storage.pragma"],
  ["exec", "INSERT INTO notes (text) VALUES ('a'); DROP TABLE notes", "storage.one_statement"],
  ["exec", "VACUUM INTO '/tmp/copy.sqlite'", "storage.vacuum"],
] as const)("db.%s of %s is refused with rule %s, audited, and nothing ran", async (tool, sql, rule) => {
  const r = await call(EXT, tool, sql);
  expect(r.reply).toMatchObject({ ok: false, code: "denied" });
  expect((r.reply as { message: string }).message).toContain(`(rule: ${rule})`);
  expect(r.rows).toMatchObject([{ capability: `db.${tool}`, decision: "denied", rule }]);
  const still = await call(EXT, "query", "SELECT count(*) AS n FROM notes");
  expect(still.reply).toEqual({ ok: true, rows: [{ n: 1 }] });
});

test("past [storage] max_bytes SQLite refuses to grow the file: denied with rule storage.max_bytes, the earlier rows kept", async () => {
  await call(EXT, "exec", "CREATE TABLE blobs (b BLOB)");
  let last: Reply = { ok: true };
  let rows: AuditRow[] = [];
  for (let i = 0; i < 12 && last.ok; i++)
    ({ reply: last, rows } = await call(EXT, "exec", "INSERT INTO blobs VALUES (zeroblob(8000))"));
  expect(last).toMatchObject({ ok: false, code: "denied" });
  expect((last as { message: string }).message).toContain("(rule: storage.max_bytes)");
  expect(rows).toMatchObject([
    { capability: "db.exec", target: "insert blobs", decision: "denied", rule: "storage.max_bytes" },
  ]);
  expect(statSync(dbFile(broker.home, EXT)).size).toBeLessThanOrEqual(65_536);
  expect((await call(EXT, "query", "SELECT count(*) AS n FROM notes")).reply).toEqual({ ok: true, rows: [{ n: 1 }] });
});

test("an extension with no approved [storage] is refused with rule storage, and no file is made", async () => {
  const r = await call(BARE, "exec", "CREATE TABLE t (x)");
  expect(r.reply).toMatchObject({ ok: false, code: "denied" });
  expect((r.reply as { message: string }).message).toContain("declare [storage]");
  expect(r.rows).toMatchObject([{ capability: "db.exec", decision: "denied", rule: "storage" }]);
  expect(() => statSync(dbFile(broker.home, BARE))).toThrow();
});

test("review shows the database and its quota; one with no [storage] shows none", () => {
  expect(reviewOutput(broker, EXT, false).text).toContain(
    `Database: its own SQLite file (<home>/data/${EXT}.sqlite), up to 65536 bytes, through db.query and db.exec`,
  );
  expect(reviewOutput(broker, BARE, false).text).not.toContain("Database:");
});

test("tether status shows each extension's storage against its quotas, and no line for one that declares and stores nothing", () => {
  const o = overview(broker);
  const size = statSync(dbFile(broker.home, EXT)).size;
  expect(o.extensions.find((e) => e.name === EXT)?.storage).toEqual({
    kv_bytes: 0,
    kv_quota: 1_048_576,
    db_bytes: size,
    db_quota: 65_536,
    migrations: 0,
  });
  const lines = renderOverview(o).split("\n");
  expect(lines).toContain(`${"".padEnd(BARE.length)}  storage: kv 0 of 1048576 bytes; db ${size} of 65536 bytes`);
  expect(lines.filter((l) => l.includes("storage:"))).toHaveLength(1);
});

test("the audit and the cap_call hooks name the tables SQLite says a statement touches: schema prefix dropped, a trigger's writes included", async () => {
  await call(EXT, "exec", "CREATE TABLE IF NOT EXISTS log (what TEXT)");
  await call(
    EXT,
    "exec",
    "CREATE TRIGGER IF NOT EXISTS notes_log AFTER INSERT ON notes BEGIN INSERT INTO log (what) VALUES (new.text); END",
  );
  const cases: Array<[string, "exec" | "query", string, string]> = [
    ["a schema-qualified delete", "exec", "DELETE FROM main.notes WHERE id = 99", "delete notes"],
    [
      "an insert whose trigger writes another table",
      "exec",
      "INSERT INTO notes (text) VALUES ('by trigger')",
      "insert log, notes",
    ],
    ["a join", "query", "SELECT n.text FROM notes n JOIN log l ON 1 LIMIT 1", "select log, notes"],
    ["a table named only inside a subquery", "query", "SELECT (SELECT count(*) FROM log) AS n", "select log"],
  ];
  for (const [what, tool, sql, target] of cases) {
    const seen = hookEvents.length;
    const { reply, rows } = await call(EXT, tool, sql);
    expect([what, reply.ok]).toEqual([what, true]);
    expect([what, rows.map((r) => r.target)]).toEqual([what, [target]]);
    expect([
      what,
      hookEvents
        .slice(seen)
        .filter((e) => e.capability === `db.${tool}`)
        .map((e) => e.target),
    ]).toEqual([what, [target]]);
  }
  // As the later tests expect it: one note.
  expect((await call(EXT, "exec", "DELETE FROM notes WHERE text = 'by trigger'")).rows.map((r) => r.target)).toEqual([
    "delete notes",
  ]);
});

test("uninstall leaves the data and says so, a reinstall finds it again; --purge removes it and says what it removed", async () => {
  const file = dbFile(broker.home, EXT);
  const size = statSync(file).size;
  const kept = await runUninstall(broker, EXT, false);
  expect(kept.result).toMatchObject({ name: EXT, purged: false, data: { db: { file, bytes: size }, kv: { keys: 0 } } });
  expect(kept.text).toContain(
    `its data stays (a reinstall finds it again; tether uninstall ${EXT} --purge removes it)`,
  );
  expect(kept.text).toContain(`db: ${file}, ${size} bytes`);
  expect(statSync(file).size).toBe(size);

  await broker.registry.install(join(tmp, "src", EXT));
  broker.registry.approve(EXT);
  expect((await call(EXT, "query", "SELECT count(*) AS n FROM notes")).reply).toEqual({ ok: true, rows: [{ n: 1 }] });

  const purged = await runUninstall(broker, EXT, true);
  expect(purged.result).toMatchObject({ purged: true, data: { db: { file } } });
  expect(purged.text).toContain("removed its data:");
  expect(() => statSync(file)).toThrow();
  expect((await runUninstall(broker, BARE, true)).text).toBe(`uninstalled ${BARE}; it had stored nothing`);
});
