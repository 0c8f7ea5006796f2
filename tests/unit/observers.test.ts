/**
 * A session's observers over a fake deliverer (no satellites): events go to
 * the observers approved for their kind, in order, one batch at a time —
 * whatever queued meanwhile goes in the next batch; notifying never waits; a
 * full queue drops its oldest, counted, and the next batch says how many; a
 * failed batch is noted and delivery goes on; close delivers within a deadline
 * and drops the rest; `setEnabled(false)` turns one observer off.
 */
import { MAX_OBSERVED_BATCH, type ObservedKind, type SessionPayload } from "../../jail-runtime/wire/session-kinds.js";
import { createLogger } from "../../broker/base/log.js";
import { MAX_EVENT_DATA_BYTES, type BatchResult } from "../../broker/sessions/observer-queue.js";
import { Observers } from "../../broker/sessions/observers.js";

type Payload = SessionPayload<"observe">;

/** A deliverer whose batches each wait for the test to answer them. */
function fake(subscribers: Record<string, ObservedKind[]>, options: { bound?: number; closeDeadlineMs?: number } = {}) {
  const batches: { extension: string; payload: Payload; answer: (r: BatchResult) => void }[] = [];
  const warnings: string[] = [];
  const log = createLogger({ level: "warn", sink: (_level, msg) => warnings.push(msg) });
  let clock = 1_000;
  const observers = new Observers(
    "s1",
    {
      subscribers: () => new Map(Object.entries(subscribers)),
      deliver: (extension, payload) =>
        new Promise<BatchResult>((answer) => batches.push({ extension, payload, answer })),
      log,
    },
    { ...options, now: () => clock++ },
  );
  /** Answers the oldest unanswered batch of `extension`. */
  const answer = (extension: string, result: BatchResult = { ok: true }) => {
    const i = batches.findIndex((b) => b.extension === extension && !("answered" in b));
    const batch = batches[i]!;
    Object.assign(batch, { answered: true });
    batch.answer(result);
    return batch.payload;
  };
  return {
    observers,
    batches,
    warnings,
    answer,
    of: (extension: string) => batches.filter((b) => b.extension === extension).map((b) => b.payload),
  };
}

/** Lets the queue's promise continuations run (no timers involved). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

test("the first event goes at once; those fired while it is handled go together in the next batch, in order, seq from 1", async () => {
  const f = fake({ watcher: ["usage", "turn"] });
  f.observers.notify("usage", { n: 1 });
  expect(f.of("watcher")).toHaveLength(1);
  for (let n = 2; n <= 5; n++) f.observers.notify(n % 2 === 0 ? "turn" : "usage", { n });
  expect(f.observers.counters("watcher")).toMatchObject({ pending: 5, delivered: 0 });
  expect(f.of("watcher")).toHaveLength(1);
  f.answer("watcher");
  await settle();
  const second = f.of("watcher")[1]!;
  expect(second.session_id).toBe("s1");
  expect(second.dropped).toBe(0);
  expect(second.events.map((e) => [e.seq, e.kind, e.data["n"]])).toEqual([
    [2, "turn", 2],
    [3, "usage", 3],
    [4, "turn", 4],
    [5, "usage", 5],
  ]);
  expect(second.events.map((e) => e.at_ms)).toEqual([1001, 1002, 1003, 1004]);
  f.answer("watcher");
  await f.observers.idle();
  expect(f.observers.counters("watcher")).toEqual({ delivered: 5, dropped: 0, pending: 0, failed: 0, failure: null });
});

test("only observers approved for the kind are told; each has its own queue, so a busy one holds up no other", async () => {
  const f = fake({ all: ["turn", "usage", "compaction", "session"], compacting: ["compaction"] });
  f.observers.harnessEvent("agent_settled", {});
  f.observers.harnessEvent("usage", { model: "m" });
  f.observers.harnessEvent("before_compact", { reason: "threshold" });
  f.observers.harnessEvent("agent_end", { reply: "x", held: 0 });
  expect(f.of("compacting").map((p) => p.events)).toEqual([
    [{ seq: 1, kind: "compaction", at_ms: 1002, data: { phase: "before", reason: "threshold" } }],
  ]);
  f.answer("compacting");
  await settle();
  expect(f.observers.counters("compacting")).toMatchObject({ delivered: 1, pending: 0 });
  // `all` is still on its first batch: the other two wait for it.
  expect(f.observers.counters("all")).toMatchObject({ delivered: 0, pending: 3 });
  expect(f.observers.counters("nobody")).toBeNull();
  f.answer("all");
  await settle();
  expect(f.of("all")[1]!.events.map((e) => e.kind)).toEqual(["usage", "compaction"]);
});

test("a batch holds at most MAX_OBSERVED_BATCH events; the rest follow in order", async () => {
  const f = fake({ w: ["usage"] });
  for (let n = 0; n < 1 + MAX_OBSERVED_BATCH + 10; n++) f.observers.notify("usage", { n });
  f.answer("w");
  await settle();
  expect(f.of("w")[1]!.events).toHaveLength(MAX_OBSERVED_BATCH);
  f.answer("w");
  await settle();
  expect(f.of("w")[2]!.events.map((e) => e.seq)).toEqual([258, 259, 260, 261, 262, 263, 264, 265, 266, 267]);
  f.answer("w");
  await f.observers.idle();
});

test("past the bound the oldest are dropped, counted once in the log, and the next batch says how many (a seq gap)", async () => {
  const f = fake({ slow: ["usage"] }, { bound: 4 });
  for (let n = 1; n <= 10; n++) f.observers.notify("usage", { n });
  // seq 1 is out in the first batch; 2..10 queued, bound 4: 2..6 dropped.
  expect(f.observers.counters("slow")).toMatchObject({ dropped: 5, pending: 5 });
  expect(f.warnings.filter((w) => w.includes("fell behind"))).toHaveLength(1);
  f.answer("slow");
  await settle();
  const next = f.of("slow")[1]!;
  expect(next.dropped).toBe(5);
  expect(next.events.map((e) => e.seq)).toEqual([7, 8, 9, 10]);
  f.answer("slow");
  await f.observers.idle();
  expect(f.observers.counters("slow")).toMatchObject({ delivered: 5, dropped: 5, pending: 0 });
});

test("a failed batch is noted (counter, log) and not sent again; delivery goes on", async () => {
  const f = fake({ flaky: ["turn"] });
  f.observers.notify("turn", { n: 1 });
  f.observers.notify("turn", { n: 2 });
  f.answer("flaky", { ok: false, error: "crashed: boom" });
  await settle();
  expect(f.warnings.some((w) => w.includes("observer 'flaky' failed a batch of 1 events (seq 1): crashed: boom"))).toBe(
    true,
  );
  expect(f.of("flaky")[1]!.events.map((e) => e.seq)).toEqual([2]);
  f.answer("flaky");
  await f.observers.idle();
  expect(f.observers.counters("flaky")).toEqual({
    delivered: 1,
    dropped: 0,
    pending: 0,
    failed: 1,
    failure: "crashed: boom",
  });
});

test("a deliverer that rejects counts as a failed batch, not an unhandled rejection", async () => {
  const warnings: string[] = [];
  const observers = new Observers("s", {
    subscribers: () => new Map([["x", ["turn"] as ObservedKind[]]]),
    deliver: () => Promise.reject(new Error("not live")),
    log: createLogger({ sink: (_l, m) => warnings.push(m) }),
  });
  observers.notify("turn", {});
  await observers.idle();
  expect(observers.counters("x")).toMatchObject({ failed: 1, failure: "not live" });
});

test("oversized data is replaced by a note of its size", async () => {
  const f = fake({ w: ["usage"] });
  f.observers.notify("usage", { big: "x".repeat(MAX_EVENT_DATA_BYTES) });
  expect(f.of("w")[0]!.events[0]!.data).toEqual({ truncated: true, bytes: MAX_EVENT_DATA_BYTES + 10 });
  f.answer("w");
  await f.observers.idle();
});

test("setEnabled(false) drops what is queued (counted) and queues nothing more; true turns it back on", async () => {
  const f = fake({ w: ["turn"] });
  f.observers.notify("turn", {});
  f.observers.notify("turn", {});
  f.observers.setEnabled("w", false);
  f.observers.notify("turn", {});
  expect(f.observers.counters("w")).toMatchObject({ dropped: 1, pending: 1 });
  f.answer("w");
  await f.observers.idle();
  f.observers.setEnabled("w", true);
  f.observers.notify("turn", {});
  expect(f.of("w")[1]!.events.map((e) => e.seq)).toEqual([3]);
  f.answer("w");
  await f.observers.idle();
});

test("an extension no longer observing here has what was queued for it dropped", async () => {
  const subscribers: Record<string, ObservedKind[]> = { gone: ["turn"], stays: ["turn"] };
  const f = fake(subscribers);
  f.observers.notify("turn", {});
  f.observers.notify("turn", {});
  delete subscribers["gone"];
  f.observers.notify("turn", {});
  f.answer("gone");
  await settle();
  expect(f.of("gone")).toHaveLength(1);
  f.answer("stays");
  await settle();
  f.answer("stays");
  await f.observers.idle();
});

test("close: what is queued goes out within the deadline; past it the rest is dropped and logged; later events are ignored", async () => {
  const f = fake({ quick: ["turn"], stuck: ["turn"] }, { closeDeadlineMs: 50 });
  f.observers.notify("turn", {});
  f.observers.notify("turn", {});
  const closing = f.observers.close();
  f.answer("quick");
  await settle();
  f.answer("quick");
  // `stuck` never answers its first batch: its second event is dropped at the deadline.
  expect(await closing).toEqual({ dropped: 1 });
  expect(f.observers.counters("quick")).toMatchObject({ delivered: 2, dropped: 0 });
  expect(f.observers.counters("stuck")).toMatchObject({ dropped: 1, pending: 1 });
  expect(f.warnings.some((w) => w.includes("observer 'stuck' missed 1 events: the session closed"))).toBe(true);
  f.observers.notify("turn", {});
  expect(f.observers.counters("quick")).toMatchObject({ pending: 0 });
  f.answer("stuck");
});
