/**
 * The ledger's start journal (store/start-journal.ts): a call's start is one
 * appended line, its row committed with the next batch. A broker killed with
 * SIGKILL (a real child process, no handler runs) loses no start: at the next
 * open every call it had begun and not committed finished is `lost`, in
 * whatever state it was in — journaled only, finished but not written,
 * committed running, committed running with its finish unwritten — and a call
 * committed finished keeps its outcome. Replaying is idempotent, a torn or
 * foreign line is skipped, a live broker's journal is never read as a dead
 * one's, and rows committed out of id order by two brokers carry their commit
 * order (seq), which the fleet's shipper follows.
 */
import { spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { Preferences } from "../../broker/sessions/preferences.js";
import { Session } from "../../broker/sessions/session.js";
import { journalDir, Ledger, LOST } from "../../broker/store/ledger.js";
import { openStore, type Store } from "../../broker/store/open.js";
import { envBundleCache } from "../support/env-options.js";
import { REPO } from "../support/satellites.js";
import { START_STATES, type StartState } from "./support/start-states.js";

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function home(): string {
  const dir = mkdtempSync(join(tmpdir(), "tether-journal-"));
  homes.push(dir);
  return dir;
}

/** Runs the crashing broker on `dir`; resolves with the ids it printed once it is dead of SIGKILL. */
async function crash(dir: string, states: readonly StartState[], real = false): Promise<Record<string, number>> {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(REPO, "tests/integration/support/crashing-ledger.ts"),
      dir,
      states.join(","),
      ...(real ? ["real"] : []),
    ],
    { cwd: REPO, stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, s) => resolve(s)));
  expect(signal).toBe("SIGKILL");
  return JSON.parse(out.split("\n")[0]!) as Record<string, number>;
}

type Row = { id: number; name: string; outcome: string; seq: number | null };
const rows = (store: Store): Row[] =>
  store.sqlite.prepare("select id, name, outcome, seq from invocations order by id").all() as Row[];

const journalFiles = (dir: string): string[] => readdirSync(journalDir({ path: join(dir, "tether.db") } as Store));

test("a broker killed in any state of a start loses none: each uncommitted or unfinished call is lost, a finished one keeps its outcome", async () => {
  const dir = home();
  const ids = await crash(dir, START_STATES);
  expect(Object.keys(ids).sort()).toEqual([...START_STATES].sort());
  // Killed: its journal stays (0600 in a 0700 folder), holding the starts after its last batch.
  const [file] = journalFiles(dir);
  const journal = join(journalDir({ path: join(dir, "tether.db") } as Store), file!);
  expect(statSync(journal).mode & 0o777).toBe(0o600);
  expect(statSync(join(journal, "..")).mode & 0o777).toBe(0o700);
  expect(readFileSync(journal, "utf8").trim().split("\n")).toHaveLength(2);

  const store = openStore(join(dir, "tether.db"));
  const ledger = new Ledger(store);
  const expected = START_STATES.map((state) => ({
    id: ids[state]!,
    name: state,
    outcome: state === "done" ? "ok" : LOST,
  }));
  expect(rows(store).map(({ id, name, outcome }) => ({ id, name, outcome }))).toEqual(
    expected.sort((a, b) => a.id - b.id),
  );
  // Read back once and removed; this ledger's own journal is the only one left.
  expect(journalFiles(dir)).toHaveLength(1);
  expect(journalFiles(dir)[0]).not.toBe(file);
  ledger.close();
  expect(journalFiles(dir)).toEqual([]);
  store.close();
});

test("a broker that never committed a batch: its journaled starts are the only record, and they become lost rows", async () => {
  const dir = home();
  const ids = await crash(dir, ["journaled", "finished-unwritten"]);
  const store = openStore(join(dir, "tether.db"));
  new Ledger(store).close();
  expect(rows(store).map((r) => [r.id, r.outcome])).toEqual(
    [ids.journaled!, ids["finished-unwritten"]!].sort((a, b) => a - b).map((id) => [id, LOST]),
  );
  store.close();
});

test("replaying a journal twice adds nothing and changes no outcome; a torn or foreign line is skipped", async () => {
  const dir = home();
  const ids = await crash(dir, START_STATES);
  const jdir = journalDir({ path: join(dir, "tether.db") } as Store);
  const [file] = readdirSync(jdir);
  const body = readFileSync(join(jdir, file!), "utf8");
  // Killed mid-append (the call was never sent), and lines no journal writes.
  appendFileSync(join(jdir, file!), '[999,"s","e","tool","torn"');
  const store = openStore(join(dir, "tether.db"));
  new Ledger(store).close();
  const first = rows(store);
  // The same journal again, as if the broker died between its batch's commit and emptying it,
  // beside junk a journal would never hold.
  writeFileSync(join(jdir, file!), `${body}{"not":"a start"}\n[0,"s","e","tool","zero","",1,false]\nx\n`);
  new Ledger(store).close();
  expect(rows(store)).toEqual(first);
  expect(first.map((r) => r.id).sort()).toEqual(Object.values(ids).sort());
  expect(readdirSync(jdir)).toEqual([]);
  store.close();
});

test("the starts of one turn are written together: before the turn's frames leave (writeStarts), or at the turn's end", async () => {
  const dir = home();
  const store = openStore(join(dir, "tether.db"));
  const ledger = new Ledger(store);
  const [file] = journalFiles(dir);
  const journal = join(journalDir(store), file!);
  const lines = () =>
    readFileSync(journal, "utf8")
      .split("\n")
      .filter((l) => l.length > 0).length;
  const start = (name: string) => ledger.begin({ sessionId: "s", extension: "e", kind: "tool", name, strand: "" });
  for (const name of ["a", "b", "c"]) start(name);
  // Held: no satellite has been sent any of them yet.
  expect(lines()).toBe(0);
  ledger.writeStarts();
  expect(lines()).toBe(3);
  ledger.writeStarts();
  expect(lines()).toBe(3);
  // A start no frame follows is written when the turn ends.
  start("d");
  expect(lines()).toBe(3);
  await new Promise((resolve) => setImmediate(resolve));
  expect(lines()).toBe(4);
  // Committed: the journal is emptied, and a start held at the commit is not written after it.
  start("e");
  ledger.flush();
  await new Promise((resolve) => setImmediate(resolve));
  expect(lines()).toBe(0);
  expect(rows(store).map((r) => r.name)).toEqual(["a", "b", "c", "d", "e"]);
  ledger.close();
  store.close();
});

test("a live broker's journal is not read as a dead one's: another ledger opening the home leaves its starts running", () => {
  const dir = home();
  const a = openStore(join(dir, "tether.db"));
  const ledgerA = new Ledger(a);
  const id = ledgerA.begin({ sessionId: "s", extension: "e", kind: "tool", name: "t", strand: "" });
  const b = openStore(join(dir, "tether.db"));
  const ledgerB = new Ledger(b);
  expect(rows(b)).toEqual([]);
  ledgerA.flush();
  expect(rows(b)).toEqual([{ id, name: "t", outcome: "running", seq: 1 }]);
  ledgerA.finish(id, "ok");
  ledgerA.close();
  ledgerB.close();
  expect(rows(b)[0]!.outcome).toBe("ok");
  a.close();
  b.close();
});

test("two brokers on one home get distinct ids and commit out of id order: seq is the commit order", () => {
  const dir = home();
  const stores = [openStore(join(dir, "tether.db")), openStore(join(dir, "tether.db"))];
  const [a, b] = stores.map((s) => new Ledger(s)) as [Ledger, Ledger];
  const start = (l: Ledger, name: string) =>
    l.begin({ sessionId: "s", extension: "e", kind: "tool", name, strand: "" });
  const seen: number[] = [];
  let mark = 0;
  // What a reader following seq (the fleet's shipper) sees after each batch.
  const newRows = () => {
    const got = stores[0]!.sqlite.prepare("select id, seq from invocations where seq > ? order by seq").all(mark) as {
      id: number;
      seq: number;
    }[];
    for (const r of got) seen.push(r.id);
    mark = got.at(-1)?.seq ?? mark;
  };
  const ids: number[] = [];
  for (let round = 0; round < 20; round++) {
    // Interleaved starts; the two batches commit in an order that changes each round.
    ids.push(start(a, `a${round}`), start(b, `b${round}`), start(a, `a${round}'`));
    const [first, second] = round % 2 === 0 ? [b, a] : [a, b];
    first.flush();
    newRows();
    second.flush();
    newRows();
  }
  expect(new Set(ids).size).toBe(ids.length);
  expect(seen.sort((x, y) => x - y)).toEqual([...ids].sort((x, y) => x - y));
  // Committed out of id order at least once: a reader by id would have skipped rows.
  const byCommit = stores[0]!.sqlite.prepare("select id from invocations order by seq").pluck().all() as number[];
  expect(byCommit).not.toEqual([...byCommit].sort((x, y) => x - y));
  a.close();
  b.close();
  for (const s of stores) s.close();
});

test("a real jailed call in flight when its broker is killed is lost; the call before it keeps its outcome", async () => {
  const dir = home();
  const ids = await crash(dir, [], true);
  const store = openStore(join(dir, "tether.db"));
  new Ledger(store).close();
  const got = rows(store);
  expect(got.find((r) => r.id === ids.done)).toMatchObject({ name: "echo", outcome: "ok" });
  expect(got.find((r) => r.id === ids.inFlight)).toMatchObject({ name: "count", outcome: LOST });
  store.close();
}, 60_000);

test("a jailed call's start is on disk before its frame leaves: the satellite's connection writes the journal first", async () => {
  const dir = home();
  const broker = Broker.open({ ...envBundleCache(), home: dir, log: createLogger({ level: "error" }) });
  try {
    const { installed } = await broker.registry.install(join(REPO, "manifests/echo"));
    broker.registry.approve(installed.manifest.name);
    new Preferences(broker.store).setGlobal(installed.manifest.name, true);
    const session = await Session.open(broker, { id: "s-order", workspace: dir });
    const [file] = journalFiles(dir);
    const journal = join(journalDir(broker.store), file!);
    // What the journal held each time a frame was about to leave for a satellite.
    const seen: string[] = [];
    const write = broker.ledger.writeStarts.bind(broker.ledger);
    broker.ledger.writeStarts = () => {
      write();
      seen.push(readFileSync(journal, "utf8"));
    };
    let id = 0;
    const done = await session.callTool("echo", '{"text":"hi"}', { onInvocation: (i) => (id = i) });
    expect(done.outcome.ok).toBe(true);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen[0]).toContain(`[${id},"s-order","echo","tool","echo",`);
    await session.close();
  } finally {
    await broker.close();
  }
}, 60_000);

test("a call's duration counts from its start, whether it finished before its row's batch or after the batch committed it running", () => {
  const dir = home();
  const store = openStore(join(dir, "tether.db"));
  const ledger = new Ledger(store);
  const realNow = Date.now;
  let now = 1_000_000;
  Date.now = () => now;
  try {
    const start = { sessionId: "s", extension: "echo", kind: "tool", name: "echo", strand: "" };
    const quick = ledger.begin(start);
    const long = ledger.begin(start);
    now += 40;
    ledger.finish(quick, "ok");
    ledger.flush(); // the long call's row is committed running
    now += 2_000;
    ledger.finish(long, "ok");
    ledger.flush();
  } finally {
    Date.now = realNow;
  }
  const durations = store.sqlite.prepare("select duration_ms from invocations order by id").pluck().all();
  expect(durations).toEqual([40, 2_040]);
  ledger.close();
  store.close();
});
