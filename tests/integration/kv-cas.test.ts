/**
 * `kv.cas` and `skv.cas` through real jailed satellites: the fixture
 * tests/integration/fixtures/counter increments a counter by get, a pause,
 * then cas with a retry — from four sessions at once (kv, one counter for
 * all), and from three satellites of one session at once (skv, the
 * session's own counter). Nothing is lost, and each call is one audit row.
 * Then the broker's own answers to cas: swapped, the current value, a delete,
 * and its refusals (not a string, the quota, malformed arguments).
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const FIXTURE = join(REPO, "tests/integration/fixtures/counter");

let tmp: string;
let broker: Broker;

type Reply = Record<string, unknown>;

async function call(tool: string, args: object, session = "default"): Promise<Reply> {
  const outcome = await broker.callTool("counter", tool, JSON.stringify(args), { session });
  if (!outcome.ok) throw new Error(`counter/${tool} failed: ${outcome.error.code}: ${outcome.error.msg}`);
  const block = outcome.value.content.find((c) => c.type === "json");
  return (block as { json: Reply }).json;
}

interface AuditRow {
  readonly session_id: string;
  readonly capability: string;
  readonly target: string;
  readonly decision: string;
  readonly rule: string;
  readonly bytes: number;
}

function audit(capability: string): AuditRow[] {
  broker.ledger.flush();
  return broker.store.sqlite
    .prepare(
      "select session_id, capability, target, decision, rule, bytes from cap_audit where capability = ? order by id",
    )
    .all(capability) as AuditRow[];
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-kv-cas-"));
  const dir = join(tmp, "counter");
  cpSync(FIXTURE, dir, { recursive: true });
  broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: createLogger({ level: "error" }) });
  await broker.registry.install(dir);
  broker.registry.approve("counter");
});

afterAll(async () => {
  await broker?.destroy();
  rmSync(tmp, { recursive: true, force: true });
});

const SESSIONS = ["s1", "s2", "s3", "s4"];
const TIMES = 15;

test("four sessions incrementing one kv counter at once by cas lose no update", async () => {
  // Each session's satellite booted first, so the increments overlap rather than queue behind boots.
  for (const session of SESSIONS) expect(await call("read", {}, session)).toEqual({ ok: true, value: null });
  const replies = await Promise.all(
    SESSIONS.map((session) => call("increment", { times: TIMES, pause_ms: 5 }, session)),
  );
  expect(await call("read", {})).toEqual({ ok: true, value: String(SESSIONS.length * TIMES) });
  const retries = replies.reduce((n, r) => n + (r.retries as number), 0);
  // With a 5 ms window between each read and its cas, four sessions collide: the retries were needed.
  expect(retries).toBeGreaterThan(0);
  // One audit row per cas, swapped or not, each allowed under builtin:kv: 60 swaps and every retry.
  const rows = audit("kv.cas");
  expect(rows.length).toBe(SESSIONS.length * TIMES + retries);
  expect(new Set(rows.map((r) => `${r.decision} ${r.rule} ${r.target}`))).toEqual(new Set(["allowed builtin:kv hits"]));
  expect(new Set(rows.map((r) => r.session_id))).toEqual(new Set(SESSIONS));
  // What is stored is the JSON string a kv.get reads back.
  const row = broker.store.sqlite
    .prepare("select encoding, value from kv where extension = 'counter' and key = 'hits'")
    .get() as { encoding: string; value: Buffer };
  expect([row.encoding, row.value.toString("utf8")]).toEqual(["json", '"60"']);
});

test("three satellites of one session incrementing its skv counter at once lose no update; other sessions' are apart", async () => {
  const calls = [0, 1, 2].map(() => call("increment", { times: TIMES, pause_ms: 5, family: "skv" }, "busy"));
  expect(await call("increment", { times: 2, family: "skv" }, "quiet")).toMatchObject({ ok: true, count: "2" });
  const replies = await Promise.all(calls);
  // The pool ran them in three satellites at once ([limits] concurrency = 3): they collided.
  expect(replies.reduce((n, r) => n + (r.retries as number), 0)).toBeGreaterThan(0);
  expect(await call("read", { family: "skv" }, "busy")).toEqual({ ok: true, value: String(3 * TIMES) });
  expect(await call("read", { family: "skv" }, "quiet")).toEqual({ ok: true, value: "2" });
  // The kv counter of the test before is untouched by either.
  expect(await call("read", {}, "busy")).toEqual({ ok: true, value: "60" });
  expect(new Set(audit("skv.cas").map((r) => `${r.decision} ${r.rule}`))).toEqual(new Set(["allowed builtin:skv"]));
});

test("the broker's answers: swapped, the current value, a delete, and its refusals in its own words", async () => {
  const cas = (args: object) => call("cas", args);
  expect(await cas({ key: "k", expected: null, value: "one" })).toEqual({ ok: true });
  expect(await cas({ key: "k", expected: null, value: "two" })).toEqual({ ok: false, current: "one" });
  expect(await cas({ key: "k", expected: "one", value: "two" })).toEqual({ ok: true });
  expect(await cas({ key: "k", expected: "two", value: null })).toEqual({ ok: true });
  expect(await cas({ key: "k", expected: "two", value: "three" })).toEqual({ ok: false, current: null });
  const before = audit("kv.cas").length;
  // A key kv.put stored a number under is not a string: refused, not answered with a current that is not one.
  await call("put", { key: "n", value: 7 });
  expect(await cas({ key: "n", expected: "7", value: "8" })).toEqual({
    ok: false,
    code: "denied",
    message: "kv.cas: the key holds JSON other than a string; cas compares and swaps strings only (rule: cas.string)",
  });
  // The quota (256 bytes) holds the 60 in kv ("hits" + '"60"' = 8 bytes), skv's counters and "n": a 300-byte value passes it.
  const over = await cas({ key: "big", expected: null, value: "x".repeat(300) });
  expect(over).toMatchObject({ ok: false, code: "denied" });
  expect(String(over.message)).toMatch(
    /^kv\.cas: storage quota of 256 bytes would be exceeded \(\d+ bytes\) \(rule: limits\.kv_bytes\)$/,
  );
  expect(await cas({ key: "k", value: "x" })).toEqual({
    ok: false,
    code: "bad_arguments",
    message:
      "kv.cas takes {key, expected, value}: expected and value each a string or null; a key is 1 to 512 characters, without NUL (rule: args)",
  });
  expect(await cas({ key: "k", expected: 1, value: "x" })).toMatchObject({ ok: false, code: "bad_arguments" });
  // Audited as put is: the refusals denied under their rules, with the bytes asked for (malformed: no target read from them).
  const rows = audit("kv.cas").slice(before);
  expect(rows.map((r) => [r.target, r.decision, r.rule, r.bytes])).toEqual([
    ["n", "denied", "cas.string", 0],
    ["big", "denied", "limits.kv_bytes", 302],
    ["", "denied", "args", 0],
    ["", "denied", "args", 0],
  ]);
});
