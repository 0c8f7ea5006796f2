/**
 * The broker's built-in capabilities — `kv.*`, `log`, `report.emit` — and the
 * capability pipeline's refusals (arguments, unknown capability, revoked
 * token), over a real broker and real jailed satellites in a temporary home.
 *
 * The fixture tests/integration/fixtures/keeper answers the broker's own
 * words for every call (`{ok: false, code, message}` when refused), so each
 * case asserts what the extension was told, what the store holds, and the
 * `cap_audit` rows the call wrote. Copies of the fixture are installed under
 * other names (and other `kv_bytes`) from temporary folders: storage is per
 * extension, so each copy starts from an empty namespace.
 *
 * Three cases found real bugs (LIKE wildcards and case folding in list
 * prefixes, log-line forgery); they are fixed and now assert the behaviour.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger, type LogFields, type LogLevel, type Logger } from "../../broker/base/log.js";
import { REPO } from "../support/satellites.js";
import { frozenClock, until } from "../support/wait.js";
import { envOptions } from "../support/env-options.js";

const FIXTURE = join(REPO, "tests/integration/fixtures/keeper");

/** The fixture as shipped: `kv_bytes = 1024`, for the quota cases. */
const QUOTA = "keeper";
/** A roomy copy (64 KiB) for round trips, listing, logging and reporting. */
const ROOMY = "keeper-roomy";
/** Another extension with the same code: it must not see the others' keys. */
const OTHER = "keeper-other";
/** A fresh 1024-byte copy for the multi-byte key quota case. */
const UTF8 = "keeper-utf8";

interface LogLine {
  readonly level: LogLevel;
  readonly msg: string;
  readonly fields: LogFields;
}

interface AuditRow {
  readonly id: number;
  readonly invocation_id: number | null;
  readonly session_id: string;
  readonly extension: string;
  readonly capability: string;
  readonly target: string;
  readonly decision: "allowed" | "denied";
  readonly rule: string;
  readonly bytes: number;
}

/** The fixture's JSON block: `ok` plus the tool's fields, or the broker's refusal. */
type Reply = { ok: true; [field: string]: unknown } | { ok: false; code: string; message: string };

interface Called<R = Reply> {
  readonly reply: R;
  /** The cap_audit rows written during the call. */
  readonly rows: AuditRow[];
  /** The ledger id of the invocation. */
  readonly invocation: number;
}

let tmp: string;
let home: string;
let broker: Broker;
const lines: LogLine[] = [];
const logger: Logger = createLogger({
  level: "debug",
  sink: (level, msg, fields) => lines.push({ level, msg, fields }),
});

/** Copies the fixture under another name and quota, into a temp folder. */
function writeVariant(name: string, kvBytes: number): string {
  const dir = join(tmp, "src", name);
  mkdirSync(join(tmp, "src"), { recursive: true });
  cpSync(FIXTURE, dir, { recursive: true });
  const file = join(dir, "manifest.toml");
  const original = readFileSync(file, "utf8");
  const text = original
    .replace(/^name = "keeper"$/m, `name = ${JSON.stringify(name)}`)
    .replace(/^kv_bytes = \d+$/m, `kv_bytes = ${kvBytes}`);
  if (!text.includes(`name = ${JSON.stringify(name)}`) || !text.includes(`kv_bytes = ${kvBytes}`))
    throw new Error("the fixture manifest did not take the variant");
  writeFileSync(file, text);
  return dir;
}

function lastAuditId(): number {
  broker.ledger.flush();
  return (broker.store.sqlite.prepare("select coalesce(max(id), 0) as id from cap_audit").get() as { id: number }).id;
}

function auditSince(id: number): AuditRow[] {
  broker.ledger.flush();
  return broker.store.sqlite.prepare("select * from cap_audit where id > ? order by id").all(id) as AuditRow[];
}

async function call<R = Reply>(
  ext: string,
  tool: string,
  args: object = {},
  options: { onReport?: (text: string) => void } = {},
): Promise<Called<R>> {
  const before = lastAuditId();
  const outcome = await broker.callTool(ext, tool, JSON.stringify(args), { session: "default", ...options });
  if (!outcome.ok) throw new Error(`${ext}/${tool} failed: ${outcome.error.code}: ${outcome.error.msg}`);
  const content = outcome.value.content;
  const block = content.find((c) => c.type === "json");
  if (block === undefined) throw new Error(`${ext}/${tool} answered no JSON block`);
  // The ledger commits in batches: flush so the row is there to read.
  broker.ledger.flush();
  const invocation = (
    broker.store.sqlite
      .prepare("select max(id) as id from invocations where extension = ? and name = ?")
      .get(ext, tool) as { id: number }
  ).id;
  return { reply: block.json as R, rows: auditSince(before), invocation };
}

/** The stored row of a key, read straight from the store. */
function stored(ext: string, key: string): { encoding: string; value: Buffer } | undefined {
  return broker.store.sqlite.prepare("select encoding, value from kv where extension = ? and key = ?").get(ext, key) as
    | { encoding: string; value: Buffer }
    | undefined;
}

/** Log lines an extension wrote through `log` (the broker prefixes them with its name). */
function logLines(ext: string): LogLine[] {
  return lines.filter((l) => l.fields.extension === ext && l.msg.startsWith(`[${ext}] `));
}

/**
 * The decisions the audit holds for one capability since `id`: rows written one by one
 * (allowed, or refused within the allowance) plus the refusals counted into aggregate rows.
 */
function decided(id: number, ext: string, capability: string): { allowed: number; refused: number; rules: string[] } {
  const rows = auditSince(id).filter((r) => r.extension === ext && r.capability === capability);
  const aggregate = (r: AuditRow) => r.invocation_id === null && r.target.endsWith("(aggregated)");
  return {
    allowed: rows.filter((r) => r.decision === "allowed").length,
    refused: rows.filter((r) => r.decision === "denied").reduce((n, r) => n + (aggregate(r) ? r.bytes : 1), 0),
    rules: [...new Set(rows.filter((r) => r.decision === "denied").map((r) => r.rule))],
  };
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-caps-"));
  home = join(tmp, "home");
  broker = Broker.open({ ...envOptions(), home, log: logger });
  for (const [name, kvBytes] of [
    [QUOTA, 1024],
    [ROOMY, 65_536],
    [OTHER, 1024],
    [UTF8, 1024],
  ] as const) {
    const dir = name === QUOTA ? join(tmp, "src", QUOTA) : writeVariant(name, kvBytes);
    if (name === QUOTA) cpSync(FIXTURE, dir, { recursive: true });
    await broker.registry.install(dir);
    broker.registry.approve(name);
  }
  expect(broker.registry.latestApproval(QUOTA)?.grants.limits.kv_bytes).toBe(1024);
  expect(broker.registry.latestApproval(ROOMY)?.grants.limits.kv_bytes).toBe(65_536);
});

afterAll(async () => {
  await broker?.destroy();
  rmSync(tmp, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------
// kv: round trips
// ---------------------------------------------------------------------------

const JSON_VALUES: ReadonlyArray<readonly [key: string, text: string]> = [
  // Own "__proto__" keys must survive as data (and never become prototypes).
  ["proto", '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"a":1}'],
  ["unicode", '{"ünï©ødé ключ 鍵":"日本語 🎉 \\u0000 \\u2028 \\"quoted\\" \\\\","emoji":"👩‍👩‍👧‍👦","lone":"\\ud800x"}'],
  ["nested", '{"a":[1,2.5,-3,1e+300,null,true,false,"",[[[]]],{"b":{"c":{"d":[{}]}}}],"z":{}}'],
  ["string", '"just a string"'],
  ["number", "3.141592653589793"],
  ["array", '[0,"1",[2],{"3":3}]'],
  ["false", "false"],
  ["ключ/鍵/🎉", '"a unicode key"'],
];

test("kv round-trips JSON exactly: own __proto__ keys, unicode, nested values", async () => {
  for (const [key, text] of JSON_VALUES) {
    const value: unknown = JSON.parse(text);
    expect((await call(ROOMY, "put", { key, value })).reply).toEqual({ ok: true });
    const got = (await call<{ ok: true; value: unknown }>(ROOMY, "get", { key })).reply;
    expect(got.ok).toBe(true);
    // Same text, same key order: nothing was dropped, reordered or re-encoded.
    expect(JSON.stringify(got.value)).toBe(JSON.stringify(value));
    expect(got.value).toEqual(value);
    // The satellite was handed JSON text (not bytes), and the store holds that text.
    expect((await call(ROOMY, "raw", { key })).reply).toEqual({ ok: true, kind: "json", json: JSON.stringify(value) });
    const row = stored(ROOMY, key);
    expect(row?.encoding).toBe("json");
    expect(row?.value.toString("utf8")).toBe(JSON.stringify(value));
  }
  const proto = (await call<{ ok: true; value: Record<string, unknown> }>(ROOMY, "get", { key: "proto" })).reply.value;
  expect(Object.keys(proto)).toEqual(["__proto__", "constructor", "a"]);
  expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
});

test("kv round-trips bytes exactly: all 256 byte values, and the empty value", async () => {
  const all = Array.from({ length: 256 }, (_, i) => i);
  const cases: Array<[string, number[]]> = [
    ["bytes/all", all],
    ["bytes/reversed", [...all].reverse()],
    ["bytes/empty", []],
    ["bytes/zeros", [0, 0, 0]],
  ];
  for (const [key, bytes] of cases) {
    expect((await call(ROOMY, "put_bytes", { key, bytes })).reply).toEqual({ ok: true });
    expect((await call(ROOMY, "get_bytes", { key })).reply).toEqual({ ok: true, bytes, uint8: true });
    expect((await call(ROOMY, "raw", { key })).reply).toEqual({ ok: true, kind: "bytes", bytes });
    const row = stored(ROOMY, key);
    expect(row?.encoding).toBe("bytes");
    expect([...row!.value]).toEqual(bytes);
  }
  // Bytes are not JSON and JSON is not bytes: each reader answers null for the other kind.
  expect((await call(ROOMY, "get", { key: "bytes/all" })).reply).toEqual({ ok: true, value: null });
  expect((await call(ROOMY, "get_bytes", { key: "string" })).reply).toEqual({ ok: true, bytes: null, uint8: false });
  // Overwriting bytes with JSON changes the kind.
  expect((await call(ROOMY, "put", { key: "bytes/zeros", value: [0, 0, 0] })).reply).toEqual({ ok: true });
  expect((await call(ROOMY, "raw", { key: "bytes/zeros" })).reply).toEqual({ ok: true, kind: "json", json: "[0,0,0]" });
});

test("a missing key reads null; delete answers whether the key existed", async () => {
  expect((await call(ROOMY, "get", { key: "never-written" })).reply).toEqual({ ok: true, value: null });
  expect((await call(ROOMY, "raw", { key: "never-written" })).reply).toEqual({ ok: true, kind: null });
  expect((await call(ROOMY, "get_bytes", { key: "never-written" })).reply).toEqual({
    ok: true,
    bytes: null,
    uint8: false,
  });

  expect((await call(ROOMY, "put", { key: "doomed", value: { x: 1 } })).reply).toEqual({ ok: true });
  expect((await call(ROOMY, "del", { key: "doomed" })).reply).toEqual({ ok: true, existed: true });
  expect(stored(ROOMY, "doomed")).toBeUndefined();
  expect((await call(ROOMY, "raw", { key: "doomed" })).reply).toEqual({ ok: true, kind: null });
  expect((await call(ROOMY, "del", { key: "doomed" })).reply).toEqual({ ok: true, existed: false });
  expect((await call(ROOMY, "del", { key: "never-written" })).reply).toEqual({ ok: true, existed: false });
});

// ---------------------------------------------------------------------------
// kv: listing
// ---------------------------------------------------------------------------

test("list answers the keys under a prefix, sorted, at most limit", async () => {
  for (const key of ["l/b", "l/c/1", "l/a", "l/c", "l/", "lx", "l.", "m/l/a"]) {
    expect((await call(ROOMY, "put", { key, value: key })).reply).toEqual({ ok: true });
  }
  const list = async (args: { prefix?: string; limit?: number }) =>
    (await call<{ ok: true; keys: string[] }>(ROOMY, "list", args)).reply.keys;
  expect(await list({ prefix: "l/" })).toEqual(["l/", "l/a", "l/b", "l/c", "l/c/1"]);
  expect(await list({ prefix: "l/", limit: 2 })).toEqual(["l/", "l/a"]);
  expect(await list({ prefix: "l/", limit: 1 })).toEqual(["l/"]);
  expect(await list({ prefix: "l/c" })).toEqual(["l/c", "l/c/1"]);
  expect(await list({ prefix: "l/c/1" })).toEqual(["l/c/1"]);
  expect(await list({ prefix: "l/c/1/" })).toEqual([]);
  expect(await list({ prefix: "l" })).toEqual(["l.", "l/", "l/a", "l/b", "l/c", "l/c/1", "lx"]);
  expect(await list({ prefix: "nothing-here" })).toEqual([]);
  // No prefix: every key of this extension, sorted, bounded by the limit.
  const everything = await list({ prefix: "", limit: 1000 });
  expect(everything).toEqual([...everything].sort());
  expect(everything).toEqual(expect.arrayContaining(["l/a", "m/l/a", "proto", "bytes/all"]));
  expect(await list({ limit: 3 })).toEqual(everything.slice(0, 3));
  // The limit is bounded: 1000 at most, 1 at least.
  expect((await call(ROOMY, "list", { prefix: "l/", limit: 1001 })).reply).toMatchObject({
    ok: false,
    code: "bad_arguments",
  });
  expect((await call(ROOMY, "list", { prefix: "l/", limit: 0 })).reply).toMatchObject({
    ok: false,
    code: "bad_arguments",
  });
});

// Was a bug, fixed (broker/caps/kv.ts, kvList): the prefix is escaped with backslashes, but
// the LIKE has no `ESCAPE '\'` clause, and SQLite's LIKE has no default escape
// character. So "w/a%" becomes the pattern `w/a\%%`, which matches keys
// starting with "w/a\" — the keys that do start with "w/a%" are not listed.
// Fix: `sql\`${kv.key} like ${escaped + "%"} escape '\\'\`` — or better, no
// LIKE at all: `substr(key, 1, length(?)) = ?` with the prefix (which also
// fixes the case bug below).
test("list treats % and _ in the prefix as characters, not wildcards", async () => {
  for (const key of ["w/a%b", "w/a%c", "w/axb", "w/a_1", "w/ab1", "w/a\\z"]) {
    expect((await call(ROOMY, "put", { key, value: 1 })).reply).toEqual({ ok: true });
  }
  const list = async (prefix: string) =>
    (await call<{ ok: true; keys: string[] }>(ROOMY, "list", { prefix })).reply.keys;
  expect(await list("w/a")).toEqual(["w/a%b", "w/a%c", "w/a\\z", "w/a_1", "w/ab1", "w/axb"]);
  expect(await list("w/a%")).toEqual(["w/a%b", "w/a%c"]);
  expect(await list("w/a_")).toEqual(["w/a_1"]);
  expect(await list("w/a\\")).toEqual(["w/a\\z"]);
});

// Was a bug, fixed (broker/caps/kv.ts, kvList): SQLite's LIKE folds ASCII case, so the
// prefix "c/k" also lists "c/K…" keys (and "c/KEY" lists "c/key"). Keys are
// case-sensitive everywhere else (get, put, delete are exact). Fix as above:
// compare the prefix exactly (substr or a key range), not with LIKE.
test("list matches the prefix case-sensitively, as get and put do", async () => {
  for (const key of ["c/Key", "c/key", "c/KEY2"]) {
    expect((await call(ROOMY, "put", { key, value: 1 })).reply).toEqual({ ok: true });
  }
  const list = async (prefix: string) =>
    (await call<{ ok: true; keys: string[] }>(ROOMY, "list", { prefix })).reply.keys;
  expect(await list("c/")).toEqual(["c/KEY2", "c/Key", "c/key"]);
  expect(await list("c/k")).toEqual(["c/key"]);
  expect(await list("c/KEY")).toEqual(["c/KEY2"]);
});

// ---------------------------------------------------------------------------
// kv: quota and namespaces
// ---------------------------------------------------------------------------

test("the kv_bytes quota refuses a put that would exceed it; overwriting with a same-size value is allowed", async () => {
  // key "big" (3 bytes) + JSON "\"xxx…\"" (1019 + 2 bytes) = exactly the 1024-byte quota.
  const fill = (c: string, n: number) => c.repeat(n);
  const first = await call(QUOTA, "put", { key: "big", value: fill("x", 1019) });
  expect(first.reply).toEqual({ ok: true });
  expect(first.rows).toEqual([
    expect.objectContaining({
      capability: "kv.put",
      decision: "allowed",
      rule: "builtin:kv",
      target: "big",
      bytes: 1021,
    }),
  ]);

  // The old value does not count twice: the same size again fits.
  expect((await call(QUOTA, "put", { key: "big", value: fill("y", 1019) })).reply).toEqual({ ok: true });
  expect(stored(QUOTA, "big")?.value.toString("utf8")).toBe(JSON.stringify(fill("y", 1019)));

  // One byte more, on the same key: 1025 > 1024.
  const grow = await call(QUOTA, "put", { key: "big", value: fill("z", 1020) });
  expect(grow.reply).toEqual({
    ok: false,
    code: "denied",
    message: "kv.put: storage quota of 1024 bytes would be exceeded (1025 bytes) (rule: limits.kv_bytes)",
  });
  expect(grow.rows).toEqual([
    expect.objectContaining({
      capability: "kv.put",
      decision: "denied",
      rule: "limits.kv_bytes",
      target: "big",
      bytes: 1022,
      extension: QUOTA,
    }),
  ]);

  // A new key: 1024 used + "k" + "1".
  const more = await call(QUOTA, "put", { key: "k", value: 1 });
  expect(more.reply).toEqual({
    ok: false,
    code: "denied",
    message: "kv.put: storage quota of 1024 bytes would be exceeded (1026 bytes) (rule: limits.kv_bytes)",
  });
  expect(more.rows).toEqual([
    expect.objectContaining({
      capability: "kv.put",
      decision: "denied",
      rule: "limits.kv_bytes",
      target: "k",
      bytes: 1,
    }),
  ]);
  // Bytes count the same way as JSON.
  const bytes = await call(QUOTA, "put_bytes", { key: "b", bytes: [1] });
  expect(bytes.reply).toMatchObject({
    ok: false,
    code: "denied",
    message: expect.stringContaining("(rule: limits.kv_bytes)"),
  });

  // Refused puts changed nothing.
  expect(stored(QUOTA, "big")?.value.toString("utf8")).toBe(JSON.stringify(fill("y", 1019)));
  expect(stored(QUOTA, "k")).toBeUndefined();
  expect(stored(QUOTA, "b")).toBeUndefined();
  expect((await call(QUOTA, "get", { key: "big" })).reply).toEqual({ ok: true, value: fill("y", 1019) });

  // Shrinking frees room; deleting frees the rest.
  expect((await call(QUOTA, "put", { key: "big", value: fill("s", 1017) })).reply).toEqual({ ok: true });
  expect((await call(QUOTA, "put", { key: "k", value: 1 })).reply).toEqual({ ok: true });
  expect((await call(QUOTA, "put", { key: "k2", value: 1 })).reply).toMatchObject({ ok: false, code: "denied" });
  expect((await call(QUOTA, "del", { key: "big" })).reply).toEqual({ ok: true, existed: true });
  expect((await call(QUOTA, "put", { key: "k2", value: fill("n", 1000) })).reply).toEqual({ ok: true });
});

// Keys count by their UTF-8 bytes. (At b50927f `used` summed `length(key)`,
// which for TEXT counts characters, so multi-byte keys were undercounted and
// an extension could store 1356 bytes under a 1024-byte quota.)
test("the quota counts a key's UTF-8 bytes, not its characters", async () => {
  const key = (i: number) => `${"€".repeat(150)}${i}`; // 451 bytes, 151 characters
  expect(Buffer.byteLength(key(1))).toBe(451);
  expect((await call(UTF8, "put", { key: key(1), value: 1 })).reply).toEqual({ ok: true }); // 452
  expect((await call(UTF8, "put", { key: key(2), value: 2 })).reply).toEqual({ ok: true }); // 904
  const third = await call(UTF8, "put", { key: key(3), value: 3 }); // 1356 > 1024
  const total = (
    broker.store.sqlite
      .prepare("select sum(length(cast(key as blob)) + length(value)) as n from kv where extension = ?")
      .get(UTF8) as { n: number }
  ).n;
  expect(total).toBeLessThanOrEqual(1024);
  expect(third.reply).toEqual({
    ok: false,
    code: "denied",
    message: "kv.put: storage quota of 1024 bytes would be exceeded (1356 bytes) (rule: limits.kv_bytes)",
  });
});

test("another extension cannot see, change or delete the first one's keys", async () => {
  expect((await call(ROOMY, "put", { key: "shared-name", value: "roomy's" })).reply).toEqual({ ok: true });
  expect((await call(OTHER, "get", { key: "shared-name" })).reply).toEqual({ ok: true, value: null });
  expect((await call(OTHER, "get", { key: "proto" })).reply).toEqual({ ok: true, value: null });
  expect((await call(OTHER, "get_bytes", { key: "bytes/all" })).reply).toEqual({ ok: true, bytes: null, uint8: false });
  expect((await call(OTHER, "list", { prefix: "", limit: 1000 })).reply).toEqual({ ok: true, keys: [] });
  expect((await call(OTHER, "del", { key: "shared-name" })).reply).toEqual({ ok: true, existed: false });
  expect((await call(OTHER, "put", { key: "shared-name", value: "other's" })).reply).toEqual({ ok: true });
  expect((await call(OTHER, "list", { prefix: "" })).reply).toEqual({ ok: true, keys: ["shared-name"] });
  expect((await call(OTHER, "get", { key: "shared-name" })).reply).toEqual({ ok: true, value: "other's" });
  expect((await call(ROOMY, "get", { key: "shared-name" })).reply).toEqual({ ok: true, value: "roomy's" });
  // The quotas are separate too: roomy's 64 KiB do not count against other's 1024 bytes.
  expect((await call(OTHER, "put", { key: "fill", value: "f".repeat(900) })).reply).toEqual({ ok: true });
  expect((await call(OTHER, "del", { key: "shared-name" })).reply).toEqual({ ok: true, existed: true });
  expect((await call(ROOMY, "get", { key: "shared-name" })).reply).toEqual({ ok: true, value: "roomy's" });
});

// ---------------------------------------------------------------------------
// kv: audit and durability
// ---------------------------------------------------------------------------

test("every kv call is one cap_audit row: builtin:kv, the decision, the key as target, the bytes", async () => {
  const session = "default";
  const put = await call(ROOMY, "put", { key: "audited", value: { n: 12345 } });
  expect(put.rows).toEqual([
    {
      id: expect.any(Number),
      invocation_id: put.invocation,
      session_id: session,
      extension: ROOMY,
      capability: "kv.put",
      target: "audited",
      decision: "allowed",
      rule: "builtin:kv",
      bytes: 11,
      secret: null,
      at: expect.any(Number),
    },
  ]);
  const bytes = await call(ROOMY, "put_bytes", { key: "audited-bytes", bytes: [1, 2, 3, 4, 5] });
  expect(bytes.rows).toEqual([
    expect.objectContaining({
      invocation_id: bytes.invocation,
      capability: "kv.put",
      target: "audited-bytes",
      decision: "allowed",
      rule: "builtin:kv",
      bytes: 5,
    }),
  ]);
  const get = await call(ROOMY, "get", { key: "audited" });
  expect(get.rows).toEqual([
    expect.objectContaining({
      invocation_id: get.invocation,
      extension: ROOMY,
      capability: "kv.get",
      target: "audited",
      decision: "allowed",
      rule: "builtin:kv",
    }),
  ]);
  const missing = await call(ROOMY, "get", { key: "audited-missing" });
  expect(missing.rows).toEqual([
    expect.objectContaining({
      capability: "kv.get",
      target: "audited-missing",
      decision: "allowed",
      rule: "builtin:kv",
    }),
  ]);
  const del = await call(ROOMY, "del", { key: "audited" });
  expect(del.rows).toEqual([
    expect.objectContaining({
      invocation_id: del.invocation,
      capability: "kv.delete",
      target: "audited",
      decision: "allowed",
      rule: "builtin:kv",
    }),
  ]);
  const list = await call(ROOMY, "list", { prefix: "audited", limit: 5 });
  expect(list.reply).toEqual({ ok: true, keys: ["audited-bytes"] });
  expect(list.rows).toEqual([
    expect.objectContaining({
      invocation_id: list.invocation,
      capability: "kv.list",
      target: "audited",
      decision: "allowed",
      rule: "builtin:kv",
    }),
  ]);
  // Every row landed in the invocation it was made in, and the invocation is in the ledger.
  for (const c of [put, bytes, get, missing, del, list]) {
    const inv = broker.store.sqlite
      .prepare("select extension, outcome from invocations where id = ?")
      .get(c.invocation);
    expect(inv).toEqual({ extension: ROOMY, outcome: "ok" });
  }
});

test("values persist across a satellite restart and a broker reopen, in the store", async () => {
  expect((await call(ROOMY, "put", { key: "durable", value: { kept: ["across", "restarts"], n: 1 } })).reply).toEqual({
    ok: true,
  });
  expect((await call(ROOMY, "put_bytes", { key: "durable-bytes", bytes: [255, 0, 128, 7] })).reply).toEqual({
    ok: true,
  });
  const bootBefore = (await call<{ boot: string }>(ROOMY, "boot")).reply.boot;

  // The satellite process exits: the next call boots a new one, which reads the same values.
  const crashed = await broker.callTool(ROOMY, "exit", "{}", { session: "default" });
  expect(crashed).toMatchObject({ ok: false, error: { code: "crashed" } });
  const bootAfter = (await call<{ boot: string }>(ROOMY, "boot")).reply.boot;
  expect(bootAfter).not.toBe(bootBefore);
  expect((await call(ROOMY, "get", { key: "durable" })).reply).toEqual({
    ok: true,
    value: { kept: ["across", "restarts"], n: 1 },
  });
  expect((await call(ROOMY, "get_bytes", { key: "durable-bytes" })).reply).toEqual({
    ok: true,
    bytes: [255, 0, 128, 7],
    uint8: true,
  });

  // A new broker on the same home: the values are in the store file, not in memory.
  await broker.close();
  broker = Broker.open({ ...envOptions(), home, log: logger });
  expect(stored(ROOMY, "durable")).toEqual({
    encoding: "json",
    value: Buffer.from('{"kept":["across","restarts"],"n":1}'),
  });
  expect(stored(ROOMY, "durable-bytes")).toEqual({ encoding: "bytes", value: Buffer.from([255, 0, 128, 7]) });
  expect((await call<{ boot: string }>(ROOMY, "boot")).reply.boot).not.toBe(bootAfter);
  expect((await call(ROOMY, "get", { key: "durable" })).reply).toEqual({
    ok: true,
    value: { kept: ["across", "restarts"], n: 1 },
  });
  expect((await call(ROOMY, "get_bytes", { key: "durable-bytes" })).reply).toEqual({
    ok: true,
    bytes: [255, 0, 128, 7],
    uint8: true,
  });
  // Written before the reopen, still counted against the quota after it.
  const usedNow =
    (
      broker.store.sqlite
        .prepare("select sum(length(cast(key as blob)) + length(value)) as n from kv where extension = ?")
        .get(QUOTA) as { n: number | null }
    ).n ?? 0;
  expect(usedNow).toBeGreaterThan(1000);
  expect((await call(QUOTA, "put", { key: "after-reopen", value: "q".repeat(10) })).reply).toEqual({
    ok: false,
    code: "denied",
    message: `kv.put: storage quota of 1024 bytes would be exceeded (${usedNow + 12 + 12} bytes) (rule: limits.kv_bytes)`,
  });
});

// ---------------------------------------------------------------------------
// log
// ---------------------------------------------------------------------------

test("log lines reach the broker's logger under the extension's name, at their level, cut at 4096 characters", async () => {
  const before = logLines(ROOMY).length;
  const c = await call(ROOMY, "logs", { n: 3, level: "warn" });
  expect(c.reply).toEqual({ ok: true, sent: 3 });
  expect(logLines(ROOMY).slice(before)).toEqual(
    [0, 1, 2].map((i) => ({
      level: "warn",
      msg: `[${ROOMY}] line ${i}`,
      fields: { extension: ROOMY, session: "default" },
    })),
  );
  expect(c.rows.map((r) => [r.capability, r.decision, r.rule, r.bytes])).toEqual(
    [0, 1, 2].map((i) => ["log", "allowed", "builtin:log", `line ${i}`.length]),
  );

  const levels = await call(ROOMY, "logs", { n: 1, level: "debug" });
  expect(levels.reply).toEqual({ ok: true, sent: 1 });
  expect(logLines(ROOMY).at(-1)).toEqual({
    level: "debug",
    msg: `[${ROOMY}] line 0`,
    fields: { extension: ROOMY, session: "default" },
  });

  const long = await call(ROOMY, "logs", { size: 5000, level: "info" });
  expect(long.reply).toEqual({ ok: true, sent: 1 });
  const last = logLines(ROOMY).at(-1)!;
  expect(last.msg).toBe(`[${ROOMY}] ${"line 0:".padEnd(5000, "x").slice(0, 4096)}`);
  expect(last.msg.length).toBe(`[${ROOMY}] `.length + 4096);
  // Another extension's lines carry its own name.
  await call(OTHER, "logs", { n: 1 });
  expect(logLines(OTHER).at(-1)).toEqual({
    level: "info",
    msg: `[${OTHER}] line 0`,
    fields: { extension: OTHER, session: "default" },
  });
});

test("log is rate-bounded per invocation: past 20 lines a second the rest are dropped, not queued", async () => {
  await call(ROOMY, "boot"); // a warm satellite
  const N = 200;
  const before = logLines(ROOMY).length;
  const auditBefore = lastAuditId();
  // The clock stands still while the lines are judged: the bucket holds its 20 and never
  // refills, so exactly 20 get through however slowly the machine runs them.
  const thaw = frozenClock();
  try {
    const c = await call(ROOMY, "logs", { n: N });
    expect(c.reply).toEqual({ ok: true, sent: N });
    // Every line is one decision, made when it arrived: the taken ones allowed, the dropped
    // ones denied (rate:log), written one by one up to the refusal allowance, then counted
    // into an aggregate row. Once all N are decided no line is left to arrive later.
    await until(`all ${N} log lines decided`, () => {
      const d = decided(auditBefore, ROOMY, "log");
      return d.allowed + d.refused >= N;
    });
    expect(decided(auditBefore, ROOMY, "log")).toEqual({ allowed: 20, refused: N - 20, rules: ["rate:log"] });
  } finally {
    thaw();
  }
  // Dropped, not queued: the lines that reached the log are the 20 allowed, the first 20, in order.
  const reached = logLines(ROOMY).slice(before);
  expect(reached.map((l) => l.msg)).toEqual(Array.from({ length: 20 }, (_, i) => `[${ROOMY}] line ${i}`));

  // Awaited, the extension is told which were dropped, in the broker's words.
  const thawAgain = frozenClock();
  try {
    const waited = await call<{ ok: true; taken: number; refused: number; refusals: unknown[] }>(ROOMY, "logs", {
      n: N,
      wait: true,
    });
    expect(waited.reply).toEqual({
      ok: true,
      taken: 20,
      refused: N - 20,
      refusals: [{ ok: false, code: "denied", message: "log: more than 20 lines a second; dropped (rule: rate:log)" }],
    });
  } finally {
    thawAgain();
  }
  // Each line's answer came after it was written: the taken ones are all in the log already.
  expect(logLines(ROOMY).length).toBe(before + 20 + 20);
});

// Was a bug, fixed (broker/caps/dispatcher.ts, the `log` case): the extension's text goes
// to the broker's log as is. The default sink (broker/base/log.ts, stderrSink)
// writes `tether <level>: <msg>` lines, so a message holding a line break
// forges whole broker log lines (here a fake "tether error:" line that names
// no extension). Fix: escape control characters (C0, C1, U+2028/2029) in
// `msg` before logging, e.g. `msg.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)`.
test("a log line cannot forge other log lines: line breaks and control characters are escaped", async () => {
  const forged = "ok\ntether error: approval revoked for every extension\r\u001b[2K\u2028";
  const before = logLines(ROOMY).length;
  expect((await call(ROOMY, "logs", { n: 1, text: forged })).reply).toEqual({ ok: true, sent: 1 });
  const got = logLines(ROOMY).slice(before);
  expect(got).toHaveLength(1);
  expect(got[0]!.msg.startsWith(`[${ROOMY}] ok`)).toBe(true);
  expect(got[0]!.msg).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/u);
  expect(got[0]!.msg).toContain("tether error: approval revoked"); // kept, as visible text on the same line
});

// ---------------------------------------------------------------------------
// report.emit
// ---------------------------------------------------------------------------

test("report.emit partials reach onReport in order, cut at 4096 characters, and are audited", async () => {
  const seen: string[] = [];
  const c = await call(ROOMY, "reports", { n: 5 }, { onReport: (t) => seen.push(t) });
  expect(c.reply).toEqual({ ok: true, sent: 5 });
  expect(seen).toEqual(["p0", "p1", "p2", "p3", "p4"]);
  expect(c.rows.map((r) => [r.invocation_id, r.capability, r.decision, r.rule, r.bytes])).toEqual(
    seen.map((t) => [c.invocation, "report.emit", "allowed", "builtin:report", t.length]),
  );

  const long: string[] = [];
  expect((await call(ROOMY, "reports", { size: 5000 }, { onReport: (t) => long.push(t) })).reply).toEqual({
    ok: true,
    sent: 1,
  });
  expect(long).toEqual(["p0:".padEnd(5000, "x").slice(0, 4096)]);
  const exact: string[] = [];
  await call(ROOMY, "reports", { size: 4096 }, { onReport: (t) => exact.push(t) });
  expect(exact).toEqual(["p0:".padEnd(4096, "x")]);

  // A partial goes to the caller of its own invocation only.
  const mine: string[] = [];
  const theirs: string[] = [];
  await call(ROOMY, "reports", { n: 1, text: "mine" }, { onReport: (t) => mine.push(t) });
  await call(OTHER, "reports", { n: 1, text: "theirs" }, { onReport: (t) => theirs.push(t) });
  expect([mine, theirs]).toEqual([["mine"], ["theirs"]]);
});

test("report.emit is rate-bounded per invocation: past 50 a second extra partials are dropped, not delayed", async () => {
  await call(ROOMY, "boot"); // a warm satellite
  const N = 300;
  const auditBefore = lastAuditId();
  // What the caller saw, in order: each partial, then the answer.
  const seen: string[] = [];
  // The clock stands still while the partials are judged: exactly the bucket's 50 get through.
  const thaw = frozenClock();
  try {
    const c = await call(ROOMY, "reports", { n: N }, { onReport: (text) => seen.push(text) });
    seen.push("(answer)");
    expect(c.reply).toEqual({ ok: true, sent: N });
    // All N decided (allowed, or denied rate:report and counted): none is left to come later.
    await until(`all ${N} partials decided`, () => {
      const d = decided(auditBefore, ROOMY, "report.emit");
      return d.allowed + d.refused >= N;
    });
    expect(decided(auditBefore, ROOMY, "report.emit")).toEqual({
      allowed: 50,
      refused: N - 50,
      rules: ["rate:report"],
    });
  } finally {
    thaw();
  }
  // Not delayed: the 50 that got through are the first 50, in order, all before the answer; none after.
  expect(seen).toEqual([...Array.from({ length: 50 }, (_, i) => `p${i}`), "(answer)"]);

  // Awaited, the extension is told each dropped partial was dropped.
  const waitedSeen: string[] = [];
  const thawAgain = frozenClock();
  try {
    const waited = await call<{ ok: true; taken: number; refused: number; refusals: unknown[] }>(
      ROOMY,
      "reports",
      { n: N, wait: true },
      { onReport: (t) => waitedSeen.push(t) },
    );
    expect(waited.reply).toEqual({
      ok: true,
      taken: 50,
      refused: N - 50,
      refusals: [
        {
          ok: false,
          code: "denied",
          message: "report.emit: more than 50 partials a second; this one was dropped (rule: rate:report)",
        },
      ],
    });
  } finally {
    thawAgain();
  }
  expect(waitedSeen).toHaveLength(50);
});

// ---------------------------------------------------------------------------
// The pipeline's refusals
// ---------------------------------------------------------------------------

test("malformed capability arguments are bad_arguments (rule args); an unknown capability is denied (rule unknown-capability); each is audited", async () => {
  const c = await call<Array<{ cap: string; ok: boolean; code?: string; message?: string }>>(ROOMY, "bad_calls");
  const answers = c.reply;
  const args = (cap: string, shape: string) => ({
    cap,
    ok: false,
    code: "bad_arguments",
    message: `${cap} takes ${shape} (rule: args)`,
  });
  const KEY = "; a key is 1 to 512 characters, without NUL";
  const put = args("kv.put", `{key, json} or {key, bytes (base64)}${KEY}`);
  expect(answers).toEqual([
    put, // number key
    put, // no value
    put, // bytes that are not base64
    put, // empty key
    args("kv.get", `{key}${KEY}`), // key over 512 characters
    args("kv.get", `{key}${KEY}`), // null arguments
    args("kv.delete", `{key}${KEY}`),
    args("kv.list", "{prefix?, limit?}"), // limit 0
    args("kv.list", "{prefix?, limit?}"), // prefix not a string
    args("log", "{level, msg}"), // unknown level
    args("log", "{level, msg}"), // msg not a string
    args("report.emit", "{text}"),
    args("report.emit", "{text}"),
    {
      cap: "fs.read",
      ok: false,
      code: "denied",
      message: "There is no capability 'fs.read' (rule: unknown-capability)",
    },
    {
      cap: "kv.drop",
      ok: false,
      code: "denied",
      message: "There is no capability 'kv.drop' (rule: unknown-capability)",
    },
    { cap: "", ok: false, code: "denied", message: "There is no capability '' (rule: unknown-capability)" },
  ]);
  expect(c.rows.map((r) => [r.invocation_id, r.extension, r.capability, r.decision, r.rule, r.target])).toEqual(
    answers.map((a) => [
      c.invocation,
      ROOMY,
      a.cap,
      "denied",
      a.code === "bad_arguments" ? "args" : "unknown-capability",
      "",
    ]),
  );
  // Nothing was written by the refused puts.
  expect(stored(ROOMY, "k")).toBeUndefined();
  expect(stored(ROOMY, "")).toBeUndefined();
});

test("a capability call made after the invocation answered is refused token_revoked and audited with rule token", async () => {
  const before = lastAuditId();
  const c = await call(ROOMY, "late");
  expect(c.reply).toEqual({ ok: true, answered: true });
  // The late call fires 30 ms after the answer: wait for its refusal to be audited (nothing else runs meanwhile).
  await until("the late call's audit row", () => auditSince(before).some((r) => r.rule === "token"));
  const rows = auditSince(before);
  expect(rows).toEqual([
    expect.objectContaining({
      invocation_id: null,
      session_id: "default",
      extension: ROOMY,
      capability: "kv.put",
      target: "",
      decision: "denied",
      rule: "token",
      bytes: 0,
    }),
  ]);
  // The satellite learns of the refusal when its reply frame arrives: ask until it has (a guard, not a timing).
  let late = await call<{ result: unknown }>(ROOMY, "late_result");
  for (let asked = 1; late.reply.result === null && asked < 200; asked++)
    late = await call<{ result: unknown }>(ROOMY, "late_result");
  expect(late.reply).toEqual({
    result: {
      ok: false,
      code: "token_revoked",
      message:
        "Capability 'kv.put' carried a token that is not the open invocation's (called after its answer, or with a stale or forged token); it is refused",
    },
  });
  expect(stored(ROOMY, "late")).toBeUndefined();
  expect((await call(ROOMY, "get", { key: "late" })).reply).toEqual({ ok: true, value: null });
});
