/**
 * Extensions' `kv` and `skv` on a fleet, over a real PostgreSQL server: the
 * keys are the fleet's, so one host reads what another wrote, and the
 * `[limits] kv_bytes` quota holds across hosts — puts racing from two hosts'
 * connections never leave more than the quota stored. The fleet's keys behave
 * as the home's store does (the same probes against both give the same
 * answers: sizes, bytewise order, exact prefixes, every cas outcome), and a
 * counter incremented by cas from both hosts' connections loses nothing where
 * get-then-put loses updates.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { FleetMember } from "../../broker/fleet.js";
import { createLogger } from "../../broker/base/log.js";
import { KvRepository, type KvSpace, type KvValue } from "../../broker/store/kv-repository.js";
import type { KvStorage } from "../../broker/store/kv-storage.js";
import { openStore, type Store } from "../../broker/store/open.js";
import { FleetKv } from "../../broker/store/pg/fleet-kv.js";
import { openPgStore, type PgStore } from "../../broker/store/pg/open.js";
import { freshDatabase } from "../support/pg-database.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";
import { until } from "../support/wait.js";
import { soak } from "../support/kv-soak.js";
import { provisionOperatorKey } from "../support/operator-key.js";

const KEEPER = join(REPO, "tests/integration/fixtures/keeper");
let url: string;
const homes: string[] = [];
const hosts: Array<{ broker: Broker; member: FleetMember }> = [];
const stores: PgStore[] = [];

beforeEach(async () => {
  url = await freshDatabase("tether_fleet_kv");
});

afterEach(async () => {
  for (const { broker, member } of hosts.splice(0)) {
    await member.close();
    await broker.destroy();
  }
  for (const s of stores.splice(0)) await s.close();
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

async function host(
  name: string,
  options: { listen?: boolean } = {},
): Promise<{ broker: Broker; member: FleetMember }> {
  const home = mkdtempSync(join(tmpdir(), `tether-fleet-kv-${name}-`));
  homes.push(home);
  provisionOperatorKey(home);
  const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }), extensionLogs: false });
  const member = await FleetMember.join(broker, { url, host: name, pollMs: 200, ...options });
  hosts.push({ broker, member });
  return { broker, member };
}

/** The keeper's JSON answer for one tool call on `broker`. */
async function keeper(broker: Broker, tool: string, args: object): Promise<Record<string, unknown>> {
  const outcome = await broker.callTool("keeper", tool, JSON.stringify(args), { session: "s1" });
  if (!outcome.ok) throw new Error(`keeper/${tool}: ${outcome.error.code}: ${outcome.error.msg}`);
  const block = outcome.value.content.find((c) => c.type === "json");
  return (block as { json: Record<string, unknown> }).json;
}

test("one host reads what another wrote, and the quota (1024 bytes) counts every host's keys", async () => {
  const a = await host("a", { listen: false });
  const b = await host("b");
  await a.broker.registry.install(KEEPER);
  a.broker.registry.approve("keeper");
  await a.member.publish();
  await until(
    "host b to see the approval",
    () =>
      b.broker.registry.get("keeper") !== null &&
      b.broker.registry.status(b.broker.registry.get("keeper")!) === "approved",
  );

  const big = "x".repeat(400);
  expect(await keeper(a.broker, "put", { key: "k1", value: big })).toMatchObject({ ok: true });
  expect(await keeper(b.broker, "get", { key: "k1" })).toEqual({ ok: true, value: big });
  expect(await keeper(b.broker, "put", { key: "k2", value: big })).toMatchObject({ ok: true });
  // 2 × (402 + 2) stored; a third would be 1212 > 1024, whichever host asks.
  const refused = await keeper(a.broker, "put", { key: "k3", value: big });
  expect(refused).toMatchObject({ ok: false, code: "denied" });
  expect(String(refused.message)).toMatch(/storage quota of 1024 bytes would be exceeded \(1212 bytes\)/);
  expect(await keeper(a.broker, "list", {})).toEqual({ ok: true, keys: ["k1", "k2"] });
  expect(await keeper(a.broker, "del", { key: "k1" })).toMatchObject({ ok: true, existed: true });
  expect(await keeper(b.broker, "list", {})).toEqual({ ok: true, keys: ["k2"] });
  expect(await keeper(b.broker, "put", { key: "k3", value: big })).toMatchObject({ ok: true });
  // A key PostgreSQL's text cannot hold is refused in the broker's words, as on a broker on its own.
  const nul = await keeper(a.broker, "put", { key: "a\u0000b", value: 1 });
  expect(nul).toMatchObject({ ok: false });
  expect(String(nul.message)).toMatch(/NUL/);
  // Neither home's own store holds the keys: they are the fleet's.
  for (const h of [a, b]) expect(h.broker.store.sqlite.prepare("select count(*) as n from kv").get()).toEqual({ n: 0 });
});

test("puts racing from two hosts' connections, in kv and in two sessions' skv, never store more than the quota", async () => {
  const hostA = await openPgStore(url);
  const hostB = await openPgStore(url);
  stores.push(hostA, hostB);
  const kvs = [new FleetKv(hostA), new FleetKv(hostB)];
  const quota = 2000;
  const spaces: KvSpace[] = [
    { extension: "racer", session: null },
    { extension: "racer", session: "s1" },
    { extension: "racer", session: "s2" },
  ];
  // 60 distinct keys of 100..199 bytes each (about 9 KB asked for, 2 KB allowed), all at once.
  const puts = Array.from({ length: 60 }, (_, i) => {
    const key = `key-${String(i).padStart(2, "0")}`;
    const value = Buffer.alloc(100 + ((i * 37) % 100), i);
    return { kv: kvs[i % 2]!, space: spaces[i % 3]!, key, size: value.length + key.length, value };
  });
  const outcomes = await Promise.all(
    puts.map((p) => p.kv.put(p.space, p.key, { value: p.value, encoding: "bytes" }, quota)),
  );
  const written = puts.filter((_, i) => outcomes[i]!.written);
  const used = await kvs[0]!.used("racer");
  expect(used).toBe(written.reduce((n, p) => n + p.size, 0));
  expect(used).toBeLessThanOrEqual(quota);
  expect(written.length).toBeGreaterThan(0);
  expect(written.length).toBeLessThan(puts.length);
  // Every refusal was right when it was decided: what it would have made exceeds the quota.
  for (const o of outcomes) if (!o.written) expect(o.after).toBeGreaterThan(quota);
  // Another extension's bytes are its own.
  expect(
    await kvs[1]!.put(
      { extension: "other", session: null },
      "k",
      { value: Buffer.alloc(1500), encoding: "bytes" },
      quota,
    ),
  ).toEqual({ written: true });
});

test("the fleet's keys answer every probe as the home's store does: sizes, bytewise order, exact prefixes", async () => {
  const pgStore = await openPgStore(url);
  stores.push(pgStore);
  const dir = mkdtempSync(join(tmpdir(), "tether-fleet-kv-lite-"));
  homes.push(dir);
  const lite: Store = openStore(join(dir, "tether.db"));
  try {
    const both: Array<[string, KvStorage]> = [
      ["sqlite", new KvRepository(lite)],
      ["postgres", new FleetKv(pgStore)],
    ];
    // Keys chosen for what differs between stores: case, LIKE's wildcards, escapes, multi-byte and astral characters, prefixes of each other.
    const keys = [
      "a",
      "A",
      "ab",
      "a%",
      "a_",
      "a\\",
      "a\\%",
      "%",
      "_x",
      "é",
      "e\u0301",
      "日本",
      "日本語",
      "😀",
      "😀x",
      "z",
      "Z",
      "a b",
      "a\tb",
      "ÿ",
      "\u00a0",
    ];
    const space = (session: string | null): KvSpace => ({ extension: "probe", session });
    const answers = await Promise.all(
      both.map(async ([name, kv]) => {
        const out: unknown[] = [];
        for (const [i, key] of keys.entries()) {
          const session = i % 2 === 0 ? null : "s";
          out.push(
            await kv.put(space(session), key, { value: Buffer.from(JSON.stringify(i)), encoding: "json" }, 1_000_000),
          );
        }
        out.push(await kv.used("probe"));
        // Every prefix of every key (and a few that match nothing), in both spaces, with two limits.
        const prefixes = new Set<string>(["", "q", "a%x", "A_"]);
        for (const key of keys) for (let n = 1; n <= key.length; n++) prefixes.add(key.slice(0, n));
        for (const prefix of prefixes)
          for (const session of [null, "s"])
            for (const limit of [1, 100])
              out.push([prefix, session, limit, await kv.list(space(session), prefix, limit)]);
        for (const key of keys) for (const session of [null, "s"]) out.push(await kv.get(space(session), key));
        for (const key of keys.slice(0, 5))
          out.push(await kv.delete(space(null), key), await kv.delete(space("s"), key));
        out.push(await kv.used("probe"));
        return {
          name,
          out: JSON.stringify(out, (_k, v: unknown) =>
            v !== null && typeof v === "object" && (v as { type?: string }).type === "Buffer"
              ? Buffer.from((v as { data: number[] }).data).toString("hex")
              : v,
          ),
        };
      }),
    );
    expect(answers[1]!.out).toEqual(answers[0]!.out);
  } finally {
    lite.close();
  }
});

/** Buffers as hex, so two stores' answers compare as text. */
const asText = (out: unknown[]): string =>
  JSON.stringify(out, (_k, v: unknown) =>
    v !== null && typeof v === "object" && (v as { type?: string }).type === "Buffer"
      ? Buffer.from((v as { data: number[] }).data).toString("hex")
      : v,
  );

test("cas answers every probe as the home's store does: swaps, mismatches, deletes, the quota, encodings, spaces", async () => {
  const pgStore = await openPgStore(url);
  stores.push(pgStore);
  const dir = mkdtempSync(join(tmpdir(), "tether-fleet-kv-cas-lite-"));
  homes.push(dir);
  const lite: Store = openStore(join(dir, "tether.db"));
  try {
    const both: Array<[string, KvStorage]> = [
      ["sqlite", new KvRepository(lite)],
      ["postgres", new FleetKv(pgStore)],
    ];
    const text = (t: string): KvValue => ({ value: Buffer.from(JSON.stringify(t)), encoding: "json" });
    const raw = (t: string): KvValue => ({ value: Buffer.from(t), encoding: "bytes" });
    const values: Array<KvValue | null> = [
      null,
      text(""),
      text("1"),
      text("2"),
      text("日本😀"),
      raw('"1"'),
      text("x".repeat(60)),
    ];
    const keys = ["n", "é", "😀x"];
    const spaces: KvSpace[] = [
      { extension: "probe", session: null },
      { extension: "probe", session: "s" },
    ];
    const answers = await Promise.all(
      both.map(async ([name, kv]) => {
        const out: unknown[] = [];
        // Every (expected, next) pair, from a key set to `expected` first: a swap (or, as the long values pile up
        // under the 150-byte quota, a refusal), then the same from a value the key does not hold: a mismatch.
        for (const space of spaces)
          for (const key of keys)
            for (const [i, expected] of values.entries())
              for (const next of values) {
                await kv.delete(space, key);
                if (expected !== null) out.push(await kv.cas(space, key, null, expected, 1_000_000));
                out.push(await kv.cas(space, key, expected, next, 150));
                out.push(await kv.get(space, key), await kv.used("probe"));
                out.push(await kv.cas(space, key, values[(i + 1) % values.length]!, expected, 150));
              }
        return { name, out: asText(out) };
      }),
    );
    const outcomes = JSON.parse(answers[0]!.out) as Array<{ result?: string }>;
    // The probe reached every outcome, so it compares each of them.
    expect(new Set(outcomes.map((o) => o?.result).filter((r) => r !== undefined))).toEqual(
      new Set(["swapped", "differs", "quota"]),
    );
    expect(answers[1]!.out).toEqual(answers[0]!.out);
  } finally {
    lite.close();
  }
});

describe("a counter incremented at once by 8 workers over two hosts' connections, 20 times each", () => {
  const workers = 8;
  const rounds = 20;

  async function hostsKv(): Promise<KvStorage[]> {
    const a = await openPgStore(url);
    const b = await openPgStore(url);
    stores.push(a, b);
    return [new FleetKv(a), new FleetKv(b)];
  }

  test("get-then-put loses updates (lockstep: every read of a round before any write)", async () => {
    const kvs = await hostsKv();
    const { counts } = await soak({
      kvs,
      spaces: [{ extension: "counter", session: null }],
      key: "hits",
      workers,
      rounds,
      how: "put",
      lockstep: true,
    });
    expect(counts).toEqual([rounds]);
  });

  test("get-then-cas with a retry loses none, in kv and in a session's skv, lockstep and free-running", async () => {
    const kvs = await hostsKv();
    const own: KvSpace = { extension: "counter", session: null };
    const session: KvSpace = { extension: "counter", session: "s1" };
    const lockstep = await soak({
      kvs,
      spaces: [own, session],
      key: "hits",
      workers,
      rounds,
      how: "cas",
      lockstep: true,
    });
    expect(lockstep.counts).toEqual([80, 80]);
    // Each round, three of each space's four workers found their read stale at least once.
    expect(lockstep.retries).toBeGreaterThanOrEqual(rounds * 3 * 2);
    const free = await soak({ kvs, spaces: [own], key: "free", workers, rounds, how: "cas", lockstep: false });
    expect(free.counts).toEqual([workers * rounds]);
  });
});

test("a session's skv writes are fenced in the database: once its lease is another host's, this host's cas, put and delete write nothing", async () => {
  const a = await host("a");
  await a.broker.registry.install(join(REPO, "tests/integration/fixtures/counter"));
  a.broker.registry.approve("counter");
  await a.member.publish();
  await a.member.openSession("f1");
  const cas = async (session: string, family: "kv" | "skv", value: string, expected?: string) => {
    const outcome = await a.broker.callTool(
      "counter",
      "cas",
      JSON.stringify({ family, key: "k", value, expected: expected ?? null }),
      { session },
    );
    if (!outcome.ok) throw new Error(`${outcome.error.code}: ${outcome.error.msg}`);
    return (outcome.value.content.find((c) => c.type === "json") as { json: Record<string, unknown> }).json;
  };
  expect(await cas("f1", "skv", "1")).toMatchObject({ ok: true });
  const fleet = await openPgStore(url);
  stores.push(fleet);
  const stored = async () =>
    (
      await fleet.pool.query<{ value: Buffer }>("select value from session_kv where session_id = 'f1' and key = 'k'")
    ).rows.map((r) => JSON.parse(r.value.toString()) as string);
  expect(await stored()).toEqual(["1"]);
  // Another host takes the lease (as it would from a host frozen past it): this host's next write is refused, named.
  await fleet.pool.query("update session_leases set host = 'elsewhere/1' where session_id = 'f1'");
  const fenced = await cas("f1", "skv", "2", "1");
  expect(fenced).toMatchObject({ ok: false, code: "denied" });
  expect(String(fenced.message)).toMatch(/session 'f1' is no longer served by this host/);
  expect(await stored()).toEqual(["1"]);
  // The direct writes are fenced too; the extension's own kv and a session this host never leased are not.
  const direct = a.member.kv;
  await expect(
    direct.put(
      { extension: "counter", session: "f1" },
      "k",
      { value: Buffer.from(JSON.stringify("3")), encoding: "json" },
      1 << 20,
    ),
  ).rejects.toThrow(/no longer served by this host/);
  await expect(direct.delete({ extension: "counter", session: "f1" }, "k")).rejects.toThrow(
    /no longer served by this host/,
  );
  expect(await stored()).toEqual(["1"]);
  expect(await cas("f1", "kv", "1")).toMatchObject({ ok: true });
  expect(await cas("unleased", "skv", "1")).toMatchObject({ ok: true });
  // The lease back with this host: it writes again.
  await fleet.pool.query("update session_leases set host = $1 where session_id = 'f1'", [`a/${process.pid}`]);
  expect(await cas("f1", "skv", "2", "1")).toMatchObject({ ok: true });
  expect(await stored()).toEqual(["2"]);
});
