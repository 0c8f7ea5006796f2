/**
 * The store over real SQLite files: migrations, upgrades with data intact,
 * enforcement of approvals, and a ledger that loses no row when a satellite dies.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { migrate } from "drizzle-orm/better-sqlite3/migrator";
import { Broker } from "../../broker/broker.js";
import { migrationsFolder, openStore } from "../../broker/store/open.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { until } from "../support/wait.js";

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), "tether-store-"));
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

function copyExtension(name: string): string {
  const dir = join(tmp, "src", name);
  mkdirSync(join(tmp, "src"), { recursive: true });
  cpSync(join(REPO, "manifests", name), dir, { recursive: true });
  return dir;
}

test("opening a store applies every migration, in WAL mode", () => {
  const store = openStore(join(tmp, "t.db"));
  expect(store.sqlite.pragma("journal_mode", { simple: true })).toBe("wal");
  const tables = (
    store.sqlite.prepare("select name from sqlite_master where type='table' order by name").all() as Array<{
      name: string;
    }>
  ).map((r) => r.name);
  expect(tables).toEqual(
    expect.arrayContaining(["installs", "approvals", "preferences", "sessions", "invocations", "cap_audit", "kv"]),
  );
  store.close();
});

test("a store created by the first migration upgrades with its data intact", () => {
  // Build a migrations folder holding only the first migration, as an older broker shipped it.
  const old = join(tmp, "old-migrations");
  mkdirSync(join(old, "meta"), { recursive: true });
  const current = migrationsFolder();
  const journal = JSON.parse(readFileSync(join(current, "meta/_journal.json"), "utf8")) as {
    entries: Array<{ tag: string }>;
  };
  expect(journal.entries.length).toBeGreaterThanOrEqual(2);
  const first = journal.entries[0]!;
  cpSync(join(current, `${first.tag}.sql`), join(old, `${first.tag}.sql`));
  writeFileSync(join(old, "meta/_journal.json"), JSON.stringify({ ...journal, entries: [first] }));

  const path = join(tmp, "old.db");
  const sqlite = new Database(path);
  migrate(drizzle(sqlite), { migrationsFolder: old });
  expect(sqlite.prepare("select count(*) as n from sqlite_master where name = 'kv'").get()).toEqual({ n: 0 });
  sqlite
    .prepare(
      "insert into installs (name, version, description, manifest_text, manifest_hash, artifact_path, artifact_hash, source_dir) values (?,?,?,?,?,?,?,?)",
    )
    .run("old", "1.0.0", "an old install", "name = 'old'", "h1", "/a.js", "h2", "/src");
  sqlite
    .prepare(
      "insert into invocations (session_id, extension, kind, name, started_at, outcome) values ('s', 'old', 'tool', 't', 1, 'ok')",
    )
    .run();
  sqlite.close();

  const store = openStore(path);
  expect(store.sqlite.prepare("select name, version, description from installs").all()).toEqual([
    { name: "old", version: "1.0.0", description: "an old install" },
  ]);
  expect(store.sqlite.prepare("select outcome from invocations").all()).toEqual([{ outcome: "ok" }]);
  store.sqlite.prepare("insert into kv (extension, key, value) values ('old', 'k', x'01')").run();
  expect(store.sqlite.prepare("select count(*) as n from kv").get()).toEqual({ n: 1 });
  store.close();
});

test("the broker refuses unapproved, revoked and changed extensions, naming the command that fixes it", async () => {
  const dir = copyExtension("echo");
  const broker = Broker.open({ ...envOptions(), home: join(tmp, "home") });
  try {
    await broker.registry.install(dir);
    await expect(broker.callTool("echo", "echo", '{"text":"x"}', { session: "default" })).rejects.toThrow(
      "Extension 'echo' is not approved. Run: tether review echo, then tether approve echo",
    );
    broker.registry.approve("echo");
    expect(await broker.callTool("echo", "echo", '{"text":"x"}', { session: "default" })).toMatchObject({ ok: true });

    // Widen the manifest and reinstall: the approval no longer covers it.
    writeFileSync(
      join(dir, "manifest.toml"),
      `${readFileSync(join(dir, "manifest.toml"), "utf8")}\n[net]\nallow = ["https://api.example.com"]\n`,
    );
    await broker.registry.install(dir);
    expect(broker.registry.status(broker.registry.require("echo"))).toBe("changed");
    await expect(broker.callTool("echo", "echo", '{"text":"x"}', { session: "other" })).rejects.toThrow(
      "Extension 'echo' changed since it was approved. Run: tether review echo to see what changed, then tether approve echo",
    );
    broker.registry.approve("echo");
    broker.registry.revoke("echo");
    await expect(broker.callTool("echo", "echo", '{"text":"x"}', { session: "third" })).rejects.toThrow(
      "Extension 'echo' was revoked",
    );
  } finally {
    await broker.destroy();
  }
});

/** Resolves at the broker's next approvals change (after its kernel brought the satellites in line). */
const nextChange = (broker: Broker) =>
  new Promise<void>((resolve) => {
    const off = broker.approvals.subscribe(() => {
      off();
      resolve();
    });
  });

test("a revocation from another process is heard without a call: the running satellite stops, the next call is refused", async () => {
  const dir = copyExtension("echo");
  const home = join(tmp, "home");
  const broker = Broker.open({ ...envOptions(), home });
  try {
    await broker.registry.install(dir);
    broker.registry.approve("echo");
    expect(await broker.callTool("echo", "echo", '{"text":"a"}', { session: "default" })).toMatchObject({ ok: true });
    expect(broker.scope("default").live.has("echo")).toBe(true);
    const heard = nextChange(broker);
    const other = Broker.open({ ...envOptions(), home });
    other.registry.revoke("echo");
    await other.close();
    // The other registry touched the store's change stamp; this broker's watch hears it.
    await heard;
    expect(broker.scope("default").live.has("echo")).toBe(false);
    await expect(broker.callTool("echo", "echo", '{"text":"b"}', { session: "default" })).rejects.toThrow(
      "was revoked",
    );
  } finally {
    await broker.destroy();
  }
});

test("another broker's calls on the home are no change: its ledger commits move data_version, not the approvals", async () => {
  const dir = copyExtension("echo");
  const home = join(tmp, "home");
  const broker = Broker.open({ ...envOptions(), home });
  const other = Broker.open({ ...envOptions(), home });
  try {
    await broker.registry.install(dir);
    broker.registry.approve("echo");
    expect(await broker.callTool("echo", "echo", '{"text":"a"}', { session: "default" })).toMatchObject({ ok: true });
    const epoch = broker.approvalEpoch;
    const version = () => broker.store.sqlite.pragma("data_version", { simple: true }) as number;
    // The neighbour's calls, as they reach the store: ledger rows, committed in its batches.
    for (let i = 0; i < 5; i++) {
      const before = version();
      const id = other.ledger.begin({ sessionId: "n", extension: "echo", kind: "tool", name: "echo", strand: "" });
      other.ledger.finish(id, "ok");
      other.ledger.flush();
      expect(version()).not.toBe(before);
      broker.approvals.heard();
    }
    expect(broker.approvalEpoch).toBe(epoch);
    expect(broker.scope("default").live.has("echo")).toBe(true);
    // A change among them is told: the neighbour revokes.
    const heard = nextChange(broker);
    other.registry.revoke("echo");
    broker.approvals.heard();
    await heard;
    expect(broker.approvalEpoch).toBe(epoch + 1);
    expect(broker.scope("default").live.has("echo")).toBe(false);
  } finally {
    await other.close();
    await broker.destroy();
  }
});

test("a revocation written past the registry (no stamp) is found by the fallback read: the satellite stops without a call", async () => {
  const dir = copyExtension("echo");
  const home = join(tmp, "home");
  const broker = Broker.open({ ...envOptions(), home });
  try {
    await broker.registry.install(dir);
    broker.registry.approve("echo");
    expect(await broker.callTool("echo", "echo", '{"text":"a"}', { session: "default" })).toMatchObject({ ok: true });
    const heard = nextChange(broker);
    // Another connection, as a process that edits the database by hand would: the stamp does not move.
    const raw = new Database(broker.store.path);
    raw.prepare("update approvals set revoked_at = ?, revoked_by = 'hand' where extension = 'echo'").run(Date.now());
    raw.close();
    await heard;
    expect(broker.scope("default").live.has("echo")).toBe(false);
    await expect(broker.callTool("echo", "echo", '{"text":"b"}', { session: "default" })).rejects.toThrow(
      "was revoked",
    );
  } finally {
    await broker.destroy();
  }
});

test("an artifact modified on disk after approval is refused", async () => {
  const dir = copyExtension("echo");
  const broker = Broker.open({ ...envOptions(), home: join(tmp, "home") });
  try {
    const { installed } = await broker.registry.install(dir);
    broker.registry.approve("echo");
    writeFileSync(installed.artifactPath, `${readFileSync(installed.artifactPath, "utf8")}\n// tampered\n`);
    await expect(broker.callTool("echo", "echo", '{"text":"x"}', { session: "default" })).rejects.toThrow(
      "was modified on disk since it was approved",
    );
  } finally {
    await broker.destroy();
  }
});

test("tool arguments are checked against the manifest's JSON Schema before reaching the satellite", async () => {
  const broker = Broker.open({ ...envOptions(), home: join(tmp, "home") });
  try {
    await broker.registry.install(copyExtension("echo"));
    broker.registry.approve("echo");
    expect(await broker.callTool("echo", "echo", '{"text":5}', { session: "default" })).toEqual({
      ok: false,
      error: { code: "bad_arguments", msg: "tool 'echo': expected string at .text" },
    });
    expect(await broker.callTool("echo", "echo", "{}", { session: "default" })).toEqual({
      ok: false,
      error: { code: "bad_arguments", msg: "tool 'echo': missing property 'text'" },
    });
    expect(await broker.callTool("echo", "count", '{"n":1000}', { session: "default" })).toMatchObject({
      ok: false,
      error: { code: "bad_arguments" },
    });
    expect(await broker.callTool("echo", "nope", "{}", { session: "default" })).toEqual({
      ok: false,
      error: { code: "unknown_tool", msg: "Unknown tool 'nope'; 'echo' serves [count, echo]" },
    });
  } finally {
    await broker.destroy();
  }
});

test("a satellite SIGKILLed mid-call loses no ledger row: the call is recorded as failed", async () => {
  const home = join(tmp, "home");
  const broker = Broker.open({ ...envOptions(), home });
  try {
    await broker.registry.install(copyExtension("misbehave"));
    broker.registry.approve("misbehave");
    expect(await broker.callTool("misbehave", "sleep", '{"ms":1}', { session: "default" })).toMatchObject({ ok: true });
    const pending = broker.callTool("misbehave", "sleep", '{"ms":60000}', { session: "default" });
    // The call is in the satellite's hands once its slot is busy (an event of the scope, not a wait).
    await until(
      "the call to reach the satellite",
      () => broker.scope("default").live.get("misbehave")?.slot.state === "busy",
    );
    // Kill the jailed process tree from outside, as the OOM killer would.
    const bwrapPid = findChildPid(process.pid, "bwrap");
    expect(bwrapPid).toBeGreaterThan(0);
    process.kill(bwrapPid, "SIGKILL");
    const outcome = await pending;
    expect(outcome).toMatchObject({ ok: false, error: { code: "crashed" } });
  } finally {
    await broker.close();
  }
  const store = openStore(join(home, "tether.db"));
  const rows = store.sqlite.prepare("select name, outcome from invocations order by id").all();
  store.close();
  expect(rows).toEqual([
    { name: "sleep", outcome: "ok" },
    { name: "sleep", outcome: "crashed" },
  ]);
});

test("rows a dead broker left running are closed as lost when the store opens again", () => {
  const store = openStore(join(tmp, "tether.db"));
  store.sqlite
    .prepare(
      "insert into invocations (session_id, extension, kind, name, started_at, outcome) values ('s', 'e', 'tool', 't', 1, 'running')",
    )
    .run();
  store.close();
  const broker = Broker.open({ ...envOptions(), home: tmp });
  expect(broker.store.sqlite.prepare("select outcome from invocations").all()).toEqual([{ outcome: "lost" }]);
  return broker.close();
});

/** The pid of a direct child of `parent` whose command is `name`. */
function findChildPid(parent: number, name: string): number {
  const children = readFileSync(`/proc/${parent}/task/${parent}/children`, "utf8")
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  for (const pid of children) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === name) return pid;
    } catch {
      // exited meanwhile
    }
  }
  return 0;
}

test("install refuses an egress rule too broad to mean anything, naming the rule", async () => {
  const dir = copyExtension("echo");
  writeFileSync(
    join(dir, "manifest.toml"),
    `${readFileSync(join(dir, "manifest.toml"), "utf8")}\n[net]\nallow = ["https://api.example.com", "https://*.com"]\n`,
  );
  const broker = Broker.open({ ...envOptions(), home: join(tmp, "home") });
  try {
    await expect(broker.registry.install(dir)).rejects.toThrow(
      /net\.allow\.1: egress rule 'https:\/\/\*\.com': .*top-level domain 'com'/,
    );
    expect(broker.registry.get("echo")).toBeNull();
  } finally {
    await broker.destroy();
  }
});

test("an approval narrowed before withheld rules were recorded still keeps its narrowing when the same manifest is approved again", async () => {
  const dir = copyExtension("echo");
  writeFileSync(
    join(dir, "manifest.toml"),
    `${readFileSync(join(dir, "manifest.toml"), "utf8")}\n[net]\nallow = ["https://a.example", "https://b.example"]\n`,
  );
  const home = join(tmp, "home");
  const broker = Broker.open({ ...envOptions(), home });
  try {
    await broker.registry.install(dir);
    expect(broker.registry.approve("echo", { onlyNet: ["https://a.example"] }).withheldNet).toEqual([
      "https://b.example",
    ]);
    // As an approval made by a broker before migration 0007 reads: nothing recorded as withheld.
    const db = new Database(join(home, "tether.db"));
    db.prepare("UPDATE approvals SET withheld_net = '[]'").run();
    db.close();
    const again = broker.registry.approve("echo");
    expect(again.grants.net).toEqual(["https://a.example"]);
    expect(again.withheldNet).toEqual(["https://b.example"]);
    expect(broker.registry.approve("echo", { all: true }).grants.net).toEqual([
      "https://a.example",
      "https://b.example",
    ]);
    expect(broker.registry.approve("echo").withheldNet).toEqual([]);
  } finally {
    await broker.destroy();
  }
});
