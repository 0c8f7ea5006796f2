/**
 * `KvRepository.cas` on the home's SQLite store: it swaps only what it was
 * told is there, answers what is there instead, judges the quota as `put`
 * does, takes the write lock before it reads, and — the reason it exists —
 * counters incremented by several connections at once lose nothing by
 * get-then-cas, where get-then-put loses updates.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KvRepository, type KvSpace, type KvValue } from "../../broker/store/kv-repository.js";
import { openStore, type Store } from "../../broker/store/open.js";
import { soak } from "../support/kv-soak.js";

let dir: string;
let path: string;
const stores: Store[] = [];

function connection(): KvRepository {
  const store = openStore(path);
  stores.push(store);
  return new KvRepository(store);
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tether-kv-cas-"));
  path = join(dir, "tether.db");
});

afterEach(() => {
  for (const store of stores.splice(0)) store.close();
  rmSync(dir, { recursive: true, force: true });
});

const json = (text: string): KvValue => ({ value: Buffer.from(text, "utf8"), encoding: "json" });
const own: KvSpace = { extension: "counter", session: null };
const BIG = 1 << 20;

test("swaps only from the value it expects, and answers what is there instead", () => {
  const kv = connection();
  // null expected: only when the key holds nothing.
  expect(kv.cas(own, "n", null, json('"1"'), BIG)).toEqual({ result: "swapped" });
  expect(kv.cas(own, "n", null, json('"9"'), BIG)).toEqual({ result: "differs", current: json('"1"') });
  expect(kv.cas(own, "n", json('"0"'), json('"9"'), BIG)).toEqual({ result: "differs", current: json('"1"') });
  expect(kv.cas(own, "n", json('"1"'), json('"2"'), BIG)).toEqual({ result: "swapped" });
  expect(kv.get(own, "n")).toEqual(json('"2"'));
  // The same bytes under another encoding are another value.
  expect(kv.cas(own, "n", { value: Buffer.from('"2"'), encoding: "bytes" }, json('"3"'), BIG)).toEqual({
    result: "differs",
    current: json('"2"'),
  });
  // null value: deletes, and only from the expected value.
  expect(kv.cas(own, "n", json('"1"'), null, BIG)).toEqual({ result: "differs", current: json('"2"') });
  expect(kv.cas(own, "n", json('"2"'), null, BIG)).toEqual({ result: "swapped" });
  expect(kv.get(own, "n")).toBeNull();
  expect(kv.cas(own, "n", json('"2"'), json('"3"'), BIG)).toEqual({ result: "differs", current: null });
  // Nothing expected, nothing to write: true of an absent key, and it stays absent.
  expect(kv.cas(own, "n", null, null, BIG)).toEqual({ result: "swapped" });
  expect(kv.list(own, "", 10)).toEqual([]);
});

test("kv and each session's skv are apart: the same key swaps in each space on its own", () => {
  const kv = connection();
  const s1: KvSpace = { extension: "counter", session: "s1" };
  const s2: KvSpace = { extension: "counter", session: "s2" };
  expect(kv.cas(own, "n", null, json('"own"'), BIG)).toEqual({ result: "swapped" });
  expect(kv.cas(s1, "n", null, json('"s1"'), BIG)).toEqual({ result: "swapped" });
  expect(kv.cas(s2, "n", json('"own"'), json('"x"'), BIG)).toEqual({ result: "differs", current: null });
  expect(kv.cas({ extension: "other", session: null }, "n", null, json('"other"'), BIG)).toEqual({ result: "swapped" });
  expect([kv.get(own, "n"), kv.get(s1, "n"), kv.get(s2, "n")]).toEqual([json('"own"'), json('"s1"'), null]);
});

test("the quota is put's: every space's bytes, the old value's replaced, and nothing written past it", () => {
  const kv = connection();
  // "k" + '"aaaa"' = 7 bytes in kv, "s" + '"bb"' = 5 in a session: 12 of 20.
  expect(kv.cas(own, "k", null, json('"aaaa"'), 20)).toEqual({ result: "swapped" });
  expect(kv.cas({ extension: "counter", session: "s1" }, "s", null, json('"bb"'), 20)).toEqual({ result: "swapped" });
  expect(kv.used("counter")).toBe(12);
  // Replacing 7 bytes by 1 + 12 makes 18: allowed; by 1 + 16 would make 22.
  expect(kv.cas(own, "k", json('"aaaa"'), json('"0123456789"'), 20)).toEqual({ result: "swapped" });
  expect(kv.cas(own, "k", json('"0123456789"'), json('"0123456789abcd"'), 20)).toEqual({ result: "quota", after: 22 });
  expect(kv.get(own, "k")).toEqual(json('"0123456789"'));
  // A new key past the quota: refused, absent after.
  expect(kv.cas(own, "new", null, json('"x"'), 20)).toEqual({ result: "quota", after: 24 });
  expect(kv.get(own, "new")).toBeNull();
  // A mismatch is answered before the quota is judged; a delete never meets it.
  expect(kv.cas(own, "k", json('"other"'), json('"0123456789abcd"'), 20)).toEqual({
    result: "differs",
    current: json('"0123456789"'),
  });
  expect(kv.cas(own, "k", json('"0123456789"'), null, 0)).toEqual({ result: "swapped" });
  expect(kv.used("counter")).toBe(5);
});

test("takes the write lock before it reads: while another connection writes, even a cas that would only compare waits", () => {
  const mine = connection();
  mine.cas(own, "n", null, json('"1"'), BIG);
  const other = openStore(path);
  stores.push(other);
  stores[0]!.sqlite.pragma("busy_timeout = 0");
  other.sqlite.exec("begin immediate");
  try {
    // A deferred transaction would read "1" from its snapshot and answer `differs`, stale by the time the other commits.
    expect(() => mine.cas(own, "n", json('"0"'), json('"2"'), BIG)).toThrow(/locked|busy/i);
  } finally {
    other.sqlite.exec("rollback");
  }
  expect(mine.cas(own, "n", json('"0"'), json('"2"'), BIG)).toEqual({ result: "differs", current: json('"1"') });
});

describe("a counter incremented at once by 8 workers over 4 connections, 25 times each (lockstep: every read before any write, each round)", () => {
  const workers = 8;
  const rounds = 25;
  const spaces: KvSpace[] = [own];

  test("get-then-put loses updates: each round's 8 writes store the same count", async () => {
    const kvs = Array.from({ length: 4 }, connection);
    const { counts } = await soak({ kvs, spaces, key: "hits", workers, rounds, how: "put", lockstep: true });
    expect(counts).toEqual([rounds]);
  });

  test("get-then-cas with a retry loses none, in kv and in two sessions' skv", async () => {
    const kvs = Array.from({ length: 4 }, connection);
    const several: KvSpace[] = [
      own,
      { extension: "counter", session: "s1" },
      { extension: "counter", session: "s2" },
      own,
    ];
    const { counts, retries } = await soak({
      kvs,
      spaces: several,
      key: "hits",
      workers,
      rounds,
      how: "cas",
      lockstep: true,
    });
    // Workers 0, 3, 4, 7 share kv (4 × 25); 1 and 5 share s1, 2 and 6 share s2 (2 × 25 each).
    expect(counts).toEqual([100, 50, 50, 100]);
    // Every round, all but one worker of each space found its read stale at least once.
    expect(retries).toBeGreaterThanOrEqual(rounds * (3 + 1 + 1));
  });

  test("free-running (no lockstep), get-then-cas still loses none", async () => {
    const kvs = Array.from({ length: 4 }, connection);
    const { counts } = await soak({ kvs, spaces, key: "free", workers, rounds, how: "cas", lockstep: false });
    expect(counts).toEqual([workers * rounds]);
  });
});
