/**
 * Compaction strategies over real jailed satellites (`session.compact`):
 * `before_compact` hooks are asked first and their text reaches the strategy;
 * the first active strategy in registry order answers unless the session
 * prefers another (saved in the store) or the caller names one; checked folds
 * are stored and listed, per compaction; a strategy that throws, passes its
 * time limit, or answers folds that overlap, run backwards or reach past the
 * conversation leaves nothing stored and says why. With no strategy active
 * the answer says so. Extensions: written to a temporary folder by this suite.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { execa } from "execa";
import type { Broker } from "../../broker/broker.js";
import type { Compacted, Session } from "../../broker/sessions/session.js";
import { openHookSession, type HookSession } from "../support/hook-session.js";
import { REPO } from "../support/satellites.js";
import { writeExtensions } from "./support/write-extensions.js";

const row = (name: string, extra = "") =>
  `\n[[compaction]]\nname = "${name}"\ndescription = "Strategy ${name}."\n${extra}`;

const EXTENSIONS = {
  keeper: {
    manifest: `\n[[hook]]\nevent = "before_compact"\n`,
    code: `import { hook } from "@tether/ext";
export const tools = {};
export const hooks = { before_compact: hook("before_compact", (p) => ({ text: \`keep the user's name (\${p.reason})\` })) };
`,
  },
  // "alpha" comes before "beta" in registry order (same priority, by name).
  alpha: {
    manifest: row("tidy"),
    code: `import type { Strategy } from "@tether/ext";
export const tools = {};
const tidy: Strategy = (input) => ({
  summary: \`tidy: \${input.messages.length} messages, hooks said [\${input.hook_text.join("; ")}], budget \${input.budget}\`,
  folds: [{ from: 0, to: 1, text: "the greeting" }, { from: 3, to: 3, text: "the question" }],
});
export const compactions = { tidy };
`,
  },
  beta: {
    manifest:
      row("terse") +
      row("throws") +
      row("slow", "deadline_ms = 300") +
      row("overlap") +
      row("outside") +
      row("backwards") +
      row("wordy"),
    code: `import type { Strategy } from "@tether/ext";
export const tools = {};
const folds = (...ranges: [number, number][]) => ranges.map(([from, to]) => ({ from, to, text: \`\${from}-\${to}\` }));
const terse: Strategy = () => ({ summary: "terse", folds: folds([2, 2]) });
const throws: Strategy = () => {
  throw new Error("no summary today");
};
const slow: Strategy = (_input, ctx) =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ summary: "late", folds: [] }), 20_000);
    ctx.signal.addEventListener("abort", () => clearTimeout(timer));
  });
const overlap: Strategy = () => ({ summary: "o", folds: folds([0, 2], [2, 3]) });
const outside: Strategy = () => ({ summary: "o", folds: folds([1, 4]) });
const backwards: Strategy = () => ({ summary: "o", folds: folds([3, 1]) });
const wordy: Strategy = () => ({ summary: "w".repeat(200), folds: [] });
export const compactions = { terse, throws, slow, overlap, outside, backwards, wordy };
`,
  },
} as const;

const MESSAGES = [
  { role: "user", content: "hi" },
  { role: "assistant", content: "hello" },
  { role: "user", content: "I am Ada" },
  { role: "user", content: "what is 2+2?" },
];

let fixtures: string;
let opened: HookSession;
let broker: Broker;
let session: Session;
const told: Compacted[] = [];

/** Every fold stored for this session, straight from the store. */
function stored(): number {
  return (
    broker.store.sqlite.prepare("select count(*) as n from folds where session_id = ?").get(session.id) as { n: number }
  ).n;
}

beforeAll(async () => {
  fixtures = writeExtensions("tether-compact-ext-", EXTENSIONS);
  opened = await openHookSession("tether-compact-", fixtures, ["keeper", "alpha", "beta"], "compact-1");
  ({ broker, session } = opened);
  session.onCompacted((data) => told.push(data));
});

afterAll(async () => {
  await opened?.close();
  rmSync(fixtures, { recursive: true, force: true });
});

test("the first active strategy in registry order compacts; before_compact text reaches it; its folds are stored and listed", async () => {
  expect(session.strategies()).toMatchObject({ current: "tidy", preferred: null });
  const report = await session.compact({ messages: MESSAGES, reason: "threshold", budget: 500 });
  expect(report.outcome).toMatchObject({
    ok: true,
    summary: "tidy: 4 messages, hooks said [keep the user's name (threshold)], budget 500",
    folds: [
      { from: 0, to: 1, text: "the greeting" },
      { from: 3, to: 3, text: "the question" },
    ],
  });
  expect([report.strategy, report.extension]).toEqual(["tidy", "alpha"]);
  expect(report.hookText).toEqual(["keep the user's name (threshold)"]);
  expect(report.trace.map((t) => [t.extension, t.answer])).toEqual([["keeper", "context"]]);
  const id = report.outcome.ok ? report.outcome.compactionId : -1;
  expect(session.folds(id).map((f) => [f.compactionId, f.strategy, f.extension, f.from, f.to, f.text])).toEqual([
    [id, "tidy", "alpha", 0, 1, "the greeting"],
    [id, "tidy", "alpha", 3, 3, "the question"],
  ]);
  // The compaction id is the strategy's invocation in the ledger.
  broker.ledger.flush();
  expect(
    broker.store.sqlite.prepare("select extension, kind, name, outcome from invocations where id = ?").get(id),
  ).toEqual({ extension: "alpha", kind: "compact", name: "tidy", outcome: "ok" });
  expect(told).toEqual([
    {
      session_id: "compact-1",
      compaction_id: id,
      strategy: "tidy",
      extension: "alpha",
      reason: "threshold",
      messages: 4,
      folds: 2,
      summary_chars: expect.any(Number),
    },
  ]);
});

test("the session's preference picks another strategy, is saved in the store, and a named strategy wins over it", async () => {
  session.preferStrategy("terse");
  expect(session.strategies()).toMatchObject({ current: "terse", preferred: "terse" });
  expect(
    broker.store.sqlite.prepare("select strategy from strategy_preferences where session_id = ?").get(session.id),
  ).toEqual({ strategy: "terse" });
  const preferred = await session.compact({ messages: MESSAGES, reason: "requested", budget: 100 });
  expect(preferred.outcome).toMatchObject({ ok: true, summary: "terse", folds: [{ from: 2, to: 2, text: "2-2" }] });
  expect(preferred.extension).toBe("beta");
  const named = await session.compact({ messages: MESSAGES, reason: "requested", budget: 500, strategy: "tidy" });
  expect(named.strategy).toBe("tidy");
  // Two compactions so far besides the first: all folds listed, oldest compaction first.
  expect(session.folds().map((f) => f.strategy)).toEqual(["tidy", "tidy", "terse", "tidy", "tidy"]);
  session.preferStrategy(null);
  expect(session.strategies().preferred).toBeNull();
  expect(() => session.preferStrategy("Not A Name")).toThrow("is not a strategy's name");
});

test("tether session folds prints them from the store, by compaction; --json has every row; a bad id is a usage error", async () => {
  const tether = (...args: string[]) =>
    execa(process.execPath, [join(REPO, "bin", "tether.js"), ...args], {
      env: { TETHER_HOME: broker.home },
      cwd: REPO,
      stdin: "ignore",
      reject: false,
      timeout: 60_000,
    });
  const text = await tether("session", "folds", session.id);
  expect(text.exitCode).toBe(0);
  const first = session.folds()[0]!.compactionId;
  expect(text.stdout.split("\n").slice(0, 3)).toEqual([
    expect.stringMatching(new RegExp(`^compaction ${first}: strategy tidy of alpha, \\d{4}-\\d\\d-\\d\\dT`)),
    "  0..1        the greeting",
    "  3..3        the question",
  ]);
  const json = await tether("session", "folds", session.id, "--json");
  expect(JSON.parse(json.stdout)).toEqual(session.folds());
  expect((await tether("session", "folds", "nobody-here")).stdout).toBe(
    "Session nobody-here has no folds: no compaction stored any.",
  );
  expect((await tether("session", "folds")).exitCode).toBe(2);
}, 120_000);

describe("a strategy that fails leaves the conversation as it was", () => {
  const cases: [string, string, string][] = [
    [
      "throws",
      "crashed",
      "compaction strategy 'throws' of 'beta' failed: Error: no summary today; the conversation is unchanged",
    ],
    [
      "slow",
      "timeout",
      "compaction strategy 'slow' of 'beta' failed: compact 'slow' passed its time limit of 300 ms; the conversation is unchanged",
    ],
    [
      "overlap",
      "crashed",
      "compaction strategy 'overlap' of 'beta' answered folds that overlap: 0..2 and 2..3; the conversation is unchanged",
    ],
    [
      "outside",
      "crashed",
      "compaction strategy 'outside' of 'beta' answered fold 1..4, past the conversation's end (it has 4 messages, from 0); the conversation is unchanged",
    ],
    [
      "backwards",
      "crashed",
      "compaction strategy 'backwards' of 'beta' answered fold 3..1, which ends before it starts; the conversation is unchanged",
    ],
    [
      "wordy",
      "crashed",
      "compaction strategy 'wordy' of 'beta' answered a summary of 200 characters; the budget is 100; the conversation is unchanged",
    ],
  ];
  test.each(cases)("%s: %s, nothing stored, nobody told", async (strategy, code, msg) => {
    const before = [stored(), told.length];
    const report = await session.compact({ messages: MESSAGES, reason: "overflow", budget: 100, strategy });
    expect(report.outcome).toEqual({ ok: false, error: { code, msg } });
    expect([stored(), told.length]).toEqual(before);
    // The hooks were still asked (they cannot veto), and their text was handed over.
    expect(report.hookText).toEqual(["keep the user's name (overflow)"]);
  });
});

test("a strategy no active extension serves is unknown; input past its bounds is refused", async () => {
  expect((await session.compact({ messages: [], reason: "x", budget: 10, strategy: "ghost" })).outcome).toEqual({
    ok: false,
    error: {
      code: "unknown_tool",
      msg: "Unknown compaction strategy 'ghost'; this session serves [backwards, outside, overlap, slow, terse, throws, tidy, wordy]",
    },
  });
  await expect(session.compact({ messages: [], reason: "x", budget: 0 })).rejects.toThrow(
    "compact: Invalid value: Expected >=1 but received 0 at .budget",
  );
});

test("with no strategy active, the answer says so and the hooks are not asked", async () => {
  session.prefer("alpha", false);
  session.prefer("beta", false);
  await session.reload();
  const report = await session.compact({ messages: MESSAGES, reason: "threshold", budget: 100 });
  expect(report.outcome).toEqual({
    ok: false,
    error: { code: "inactive", msg: "no compaction strategy is active in this session" },
  });
  expect(report.trace).toEqual([]);
  expect(session.strategies()).toEqual({ strategies: [], current: null, preferred: null });
});
