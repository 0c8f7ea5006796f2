/**
 * Observers over real jailed satellites. `watcher` observes turns, usage and
 * the session; `compactor` observes compactions only. Each records every batch
 * it is handed in its kv (so every batch is also a kv write under the batch's
 * own token), and does what a usage row's `model` asks: `hold:<tag>` blocks its
 * batch until the test writes `release:<tag>` to its kv, `throw` fails the
 * batch, `late` makes a kv call from a timer after the batch answered. The
 * fixtures are written to a temporary folder here.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ObservedEvent } from "../../jail-runtime/wire/session-kinds.js";
import type { Broker } from "../../broker/broker.js";
import type { Session } from "../../broker/sessions/session.js";
import { kvRepository } from "../../broker/store/kv-repository.js";
import { openHookSession, type HookSession } from "../support/hook-session.js";
import { until } from "../support/wait.js";

const OBSERVER = `
import { kv } from "@tether/cap";
import type { Observer } from "@tether/ext";

export const tools = {};

export const observe: Observer = async (batch, ctx) => {
  const n = ((await kv.get("batches")) as number | null) ?? 0;
  await kv.put("batch-" + (n + 1), { dropped: batch.dropped, events: batch.events });
  await kv.put("batches", n + 1);
  for (const e of batch.events) {
    const model = e.kind === "usage" ? String(e.data.model) : "";
    if (model.startsWith("hold:")) {
      const tag = model.slice(5);
      await kv.put("holding:" + tag, true);
      while ((await kv.get("release:" + tag)) !== true && !ctx.signal.aborted) await new Promise((r) => setTimeout(r, 10));
      await kv.put("released:" + tag, true);
    }
    if (model === "throw") throw new Error("observer asked to fail");
    if (model === "late") setTimeout(() => void kv.put("late", 1).catch(() => {}), 30);
  }
};
`;

function fixture(root: string, name: string, events: string[]): void {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "index.ts"), OBSERVER);
  writeFileSync(
    join(dir, "manifest.toml"),
    [
      `name = "${name}"`,
      `version = "1.0.0"`,
      `description = "Records every batch it observes in kv."`,
      `entry = "index.ts"`,
      ``,
      `[observe]`,
      `events = ${JSON.stringify(events)}`,
      ``,
      `[limits]`,
      `memory_mb = 64`,
      `idle_s = 0`,
      `kv_bytes = 16777216`,
      ``,
    ].join("\n"),
  );
}

let fixtures: string;
let opened: HookSession;
let broker: Broker;
let session: Session;

interface Batch {
  readonly dropped: number;
  readonly events: ObservedEvent[];
}

function kvGet(extension: string, key: string): unknown {
  const row = kvRepository(broker.store).get({ extension, session: null }, key);
  return row === null ? null : JSON.parse(row.value.toString("utf8"));
}

function kvPut(extension: string, key: string, value: unknown): void {
  kvRepository(broker.store).put(
    { extension, session: null },
    key,
    { value: Buffer.from(JSON.stringify(value)), encoding: "json" },
    1 << 30,
  );
}

/** Every batch `extension` recorded, in order. */
function batches(extension: string): Batch[] {
  const n = (kvGet(extension, "batches") as number | null) ?? 0;
  return Array.from({ length: n }, (_, i) => kvGet(extension, `batch-${i + 1}`) as Batch);
}

const events = (extension: string): ObservedEvent[] => batches(extension).flatMap((b) => b.events);
const counters = (extension: string) => session.status().find((s) => s.name === extension)?.observer;
const usage = (model: string) => ({
  seq: 1,
  origin: "provider_reported" as const,
  model,
  input_tokens: 10,
  output_tokens: 2,
});

beforeAll(async () => {
  fixtures = mkdtempSync(join(tmpdir(), "tether-observer-fixtures-"));
  fixture(fixtures, "watcher", ["turn", "usage", "session"]);
  fixture(fixtures, "compactor", ["compaction"]);
  opened = await openHookSession("tether-observers-", fixtures, ["watcher", "compactor"], "observers-1");
  ({ broker, session } = opened);
});

afterAll(async () => {
  await opened?.close();
  rmSync(fixtures, { recursive: true, force: true });
});

test("at open, an observer of the session is told what was activated, as seq 1; status shows its counters", async () => {
  await session.observers.idle();
  expect(batches("watcher")).toEqual([
    {
      dropped: 0,
      events: [
        {
          seq: 1,
          kind: "session",
          at_ms: expect.any(Number),
          data: { change: "activation", activated: ["compactor", "watcher"], deactivated: [] },
        },
      ],
    },
  ]);
  expect(batches("compactor")).toEqual([]);
  expect(counters("watcher")).toEqual({ delivered: 1, dropped: 0, pending: 0, failed: 0, failure: null });
  expect(counters("compactor")).toEqual({ delivered: 0, dropped: 0, pending: 0, failed: 0, failure: null });
});

test("each observer gets only the kinds it was approved for, in order, with seq per observer", async () => {
  await session.fire("agent_settled", {});
  await session.fire("usage", usage("m1"));
  await session.fire("before_compact", { reason: "threshold" });
  session.observers.notify("compaction", { strategy: "folds", folded: 3 });
  await session.observers.idle();
  expect(
    events("watcher")
      .slice(1)
      .map((e) => [e.seq, e.kind, e.data]),
  ).toEqual([
    [2, "turn", {}],
    [3, "usage", usage("m1")],
  ]);
  expect(events("compactor").map((e) => [e.seq, e.kind, e.data])).toEqual([
    [1, "compaction", { phase: "before", reason: "threshold" }],
    [2, "compaction", { strategy: "folds", folded: 3 }],
  ]);
});

test("fire() returns while an observer is still busy, and what queued meanwhile arrives as one batch, in order", async () => {
  const before = batches("watcher").length;
  await session.fire("usage", usage("hold:a"));
  await until("watcher holding its batch", () => kvGet("watcher", "holding:a") === true);
  await session.fire("agent_settled", {});
  for (const model of ["u1", "u2", "u3"]) await session.fire("usage", usage(model));
  // Every fire resolved; the observer is provably still inside its first batch.
  expect(kvGet("watcher", "released:a")).toBeNull();
  expect(counters("watcher")).toMatchObject({ pending: 5 });
  kvPut("watcher", "release:a", true);
  await session.observers.idle();
  const [held, next] = batches("watcher").slice(before);
  expect(held!.events.map((e) => [e.seq, e.data["model"]])).toEqual([[4, "hold:a"]]);
  expect(next!.dropped).toBe(0);
  expect(next!.events.map((e) => [e.seq, e.kind, e.data["model"] ?? null])).toEqual([
    [5, "turn", null],
    [6, "usage", "u1"],
    [7, "usage", "u2"],
    [8, "usage", "u3"],
  ]);
  expect(batches("watcher")).toHaveLength(before + 2);
});

test("a slow observer's queue is bounded: the oldest are dropped, counted, and the next batch says how many (a seq gap)", async () => {
  const before = batches("watcher").length;
  const start = counters("watcher")!;
  await session.fire("usage", usage("hold:b"));
  await until("watcher holding its batch", () => kvGet("watcher", "holding:b") === true);
  // Queued synchronously by each fire: 1034 events behind the held one, against a bound of 1024.
  await Promise.all(Array.from({ length: 1034 }, (_, i) => session.fire("usage", usage(`o${i}`))));
  expect(counters("watcher")).toMatchObject({ dropped: start.dropped + 10, pending: 1 + 1024 });
  kvPut("watcher", "release:b", true);
  await session.observers.idle();
  const [held, ...rest] = batches("watcher").slice(before);
  const holdSeq = held!.events[0]!.seq;
  expect(rest[0]!.dropped).toBe(10);
  expect(rest.slice(1).map((b) => b.dropped)).toEqual([0, 0, 0]);
  expect(rest.map((b) => b.events.length)).toEqual([256, 256, 256, 256]);
  const seqs = rest.flatMap((b) => b.events.map((e) => e.seq));
  expect(seqs[0]).toBe(holdSeq + 11);
  expect(seqs).toEqual(Array.from({ length: 1024 }, (_, i) => holdSeq + 11 + i));
  expect(rest[0]!.events[0]!.data["model"]).toBe("o10");
  expect(counters("watcher")).toMatchObject({
    dropped: start.dropped + 10,
    pending: 0,
    failed: 0,
    delivered: start.delivered + 1025,
  });
});

test("an observer that throws is noted (counter, last error) and the next batch still arrives", async () => {
  await session.fire("usage", usage("throw"));
  await session.observers.idle();
  expect(counters("watcher")).toMatchObject({ failed: 1, failure: expect.stringContaining("observer asked to fail") });
  const last = events("watcher").at(-1)!;
  await session.fire("agent_settled", {});
  await session.observers.idle();
  expect(events("watcher").at(-1)).toMatchObject({ seq: last.seq + 1, kind: "turn" });
});

test("a capability call from a timer after the batch answered is refused token_revoked", async () => {
  const since = (
    broker.store.sqlite.prepare("select coalesce(max(id), 0) as id from cap_audit").get() as { id: number }
  ).id;
  await session.fire("usage", usage("late"));
  await session.observers.idle();
  const refused = () => {
    broker.ledger.flush();
    return broker.store.sqlite
      .prepare(
        "select capability, decision, rule from cap_audit where id > ? and extension = 'watcher' and rule = 'token'",
      )
      .all(since);
  };
  await until("the late call's audit row", () => refused().length > 0);
  expect(refused()).toEqual([{ capability: "kv.put", decision: "denied", rule: "token" }]);
  expect(kvGet("watcher", "late")).toBeNull();
});

test("setEnabled(false) stops one observer here; true turns it back on", async () => {
  const before = events("watcher").length;
  session.observers.setEnabled("watcher", false);
  await session.fire("agent_settled", {});
  await session.observers.idle();
  expect(events("watcher")).toHaveLength(before);
  session.observers.setEnabled("watcher", true);
  await session.fire("agent_settled", {});
  await session.observers.idle();
  expect(events("watcher")).toHaveLength(before + 1);
});

test("preferences and reloads are session events; an observer that leaves gets nothing more", async () => {
  const before = events("watcher").length;
  const compactorBefore = events("compactor").length;
  session.prefer("compactor", false);
  expect(await session.reload()).toMatchObject({ deactivated: ["compactor"] });
  await session.fire("before_compact", { reason: "requested" });
  await session.observers.idle();
  expect(
    events("watcher")
      .slice(before)
      .map((e) => e.data),
  ).toEqual([
    { change: "preference", extension: "compactor", enabled: false },
    { change: "activation", activated: [], deactivated: ["compactor"], failed: [] },
  ]);
  expect(events("compactor")).toHaveLength(compactorBefore);
  expect(counters("compactor")).toBeUndefined();
});

test("close tells observers the session ends and delivers what was queued first", async () => {
  await session.fire("agent_settled", {});
  await session.close("done");
  const tail = events("watcher").slice(-2);
  expect(tail.map((e) => [e.kind, e.data])).toEqual([
    ["turn", {}],
    ["session", { change: "closing", reason: "done" }],
  ]);
});
