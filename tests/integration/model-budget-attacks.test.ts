/**
 * `model.complete`'s budget against a hostile pair: the asking extension and a
 * provider (another extension, whose word about usage the budget does not take
 * below what its text bears). Over real jailed satellites, providers of their
 * own (no HTTP). Two classes, each probed every way this suite knows:
 *  - a provider reporting less than it delivered: no usage for a long text, for
 *    streamed deltas, for both — charged at least a token per 8 bytes of what
 *    the asker received, and the text (and deltas) never longer than
 *    `max_tokens` can bear (cut, `stop_reason: "max_tokens"`);
 *  - an asker ending its call before the provider answers: the invocation
 *    answering with the call in flight, a timer after it — a cancelled call
 *    charges all it held, so the day's budget still bounds the provider work.
 * And the allow-list against spellings of a provider's name.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { BYTES_PER_TOKEN_FLOOR } from "../../jail-runtime/wire/model-args.js";
import { Session } from "../../broker/sessions/session.js";
import { envOptions } from "../support/env-options.js";
import { until } from "../support/wait.js";
import { writeExtensions } from "./support/write-extensions.js";

const SLOW = 120_000;
let tmp: string;
let fixtures: string;
let broker: Broker;
let session: Session;

const ASKER = (tool: string) => `import { model, CapError } from "@tether/cap";
import { outcome, json, type Tool } from "@tether/ext";
const ask: Tool = async (args) => {
  const a = args as { model: string; provider?: string; max_tokens: number };
  try {
    const reply = await model.complete({ model: a.model, ...(a.provider !== undefined ? { provider: a.provider } : {}),
      messages: [{ role: "user", content: "hi" }], max_tokens: a.max_tokens }, { onDelta: () => {} });
    return outcome([json({ bytes: new TextEncoder().encode(reply.text).length, usage: reply.usage,
      stop: reply.stop_reason, deltaBytes: new TextEncoder().encode(reply.deltas.join("")).length })]);
  } catch (err) {
    if (err instanceof CapError) return outcome([json({ code: err.code, msg: err.message })]);
    return outcome([json({ thrown: String(err) })]);
  }
};
// Leaves the call in flight and answers at once.
const fire: Tool = async (args) => {
  const a = args as { model: string; max_tokens: number };
  void model.complete({ model: a.model, messages: [{ role: "user", content: "x" }], max_tokens: a.max_tokens })
    .catch(() => {});
  await new Promise((r) => setTimeout(r, 100));
  return outcome([json({ fired: true })]);
};
export const tools: Record<string, Tool> = { ${tool}: ask, ${tool}_fire: fire };
`;

const tools = (tool: string) =>
  `[[tool]]\nname = "${tool}"\ndescription = "asks"\n\n[[tool]]\nname = "${tool}_fire"\ndescription = "fires"\n\n`;
const budget = (perCall: number, perDay: number, providers?: string[]) =>
  `[model]\n${providers !== undefined ? `providers = ${JSON.stringify(providers)}\n` : ""}` +
  `max_tokens_per_call = ${perCall}\nmax_tokens_per_day = ${perDay}\n`;
const provider = (name: string) =>
  `[[provider]]\nname = "${name}"\ndescription = "provider ${name}"\n` +
  `models = [{ id = "${name}-model", context_window = 100000 }]\n`;

/** Providers that under-report: text, deltas, or both, each with no usage at all. */
const LIARS = {
  text: `async () => ({ text: "y".repeat(1024 * 1024), usage: { input_tokens: 0, output_tokens: 0 } })`,
  deltas: `async (_r, ctx) => { for (let i = 0; i < 64; i++) ctx.report("z".repeat(4096));
    return { text: "", usage: { input_tokens: 0, output_tokens: 0 } }; }`,
  both: `async (_r, ctx) => { for (let i = 0; i < 16; i++) ctx.report("é".repeat(2048));
    return { text: "é".repeat(32768), usage: { input_tokens: 0, output_tokens: 1 } }; }`,
  // Streams one thing and answers another: the asker receives both.
  split: `async (_r, ctx) => { ctx.report("A".repeat(128));
    return { text: "B".repeat(4096), usage: { input_tokens: 0, output_tokens: 0 } }; }`,
  // Streams a little and answers nothing.
  streamed: `async (_r, ctx) => { ctx.report("s".repeat(100));
    return { text: "", usage: { input_tokens: 0, output_tokens: 0 } }; }`,
} as const;

const EXTENSIONS = {
  asker: { manifest: tools("ask") + budget(64, 1_000_000), code: ASKER("ask") },
  stingy: { manifest: tools("stingy") + budget(64, 200), code: ASKER("stingy") },
  allowp: { manifest: tools("allowp") + budget(64, 10_000, ["honest"]), code: ASKER("allowp") },
  honest: {
    manifest: provider("honest"),
    code: `import type { Provider } from "@tether/ext";
export const providers = { honest: (async () => ({ text: "fine", usage: { input_tokens: 30, output_tokens: 2 } })) as Provider };
`,
  },
  other: {
    manifest: provider("other"),
    code: `import type { Provider } from "@tether/ext";
export const providers = { other: (async () => ({ text: "other", usage: { input_tokens: 1, output_tokens: 1 } })) as Provider };
`,
  },
  ...Object.fromEntries(
    Object.entries(LIARS).map(([kind, body]) => [
      `liar-${kind}`,
      {
        manifest: provider(`liar-${kind}`),
        code: `import type { Provider } from "@tether/ext";\nexport const providers = { "liar-${kind}": (${body}) as Provider };\n`,
      },
    ]),
  ),
  // Says it started, then answers after 400 ms whatever happens (it ignores the cancel).
  slow: {
    manifest: provider("slow"),
    code: `import type { Provider } from "@tether/ext";
export const providers = { slow: (async (_r, ctx) => { ctx.report("started"); await new Promise((r) => setTimeout(r, 400));
  return { text: "done", usage: { input_tokens: 40, output_tokens: 40 } }; }) as Provider };
`,
  },
};

type Answer = {
  bytes?: number;
  deltaBytes?: number;
  usage?: { input_tokens: number; output_tokens: number };
  stop?: string | null;
  code?: string;
  msg?: string;
};

async function ask(tool: string, args: Record<string, unknown>): Promise<Answer> {
  const report = await session.callTool(tool, JSON.stringify(args));
  if (!report.outcome.ok) throw new Error(`${tool} failed: ${JSON.stringify(report.outcome.error)}`);
  const block = report.outcome.value.content[0] as { json?: unknown };
  return (typeof block.json === "string" ? JSON.parse(block.json) : block.json) as Answer;
}

/** The model.complete audit rows of `extension`: decision and the tokens charged. */
function charged(extension: string): { decision: string; bytes: number | null }[] {
  broker.ledger.flush();
  return broker.store.sqlite
    .prepare("SELECT decision, bytes FROM cap_audit WHERE capability = 'model.complete' AND extension = ? ORDER BY id")
    .all(extension) as { decision: string; bytes: number | null }[];
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-model-budget-"));
  broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: createLogger({ level: "error" }) });
  fixtures = writeExtensions("tether-model-budget-ext-", EXTENSIONS, { deadlineMs: 20_000 });
  for (const name of Object.keys(EXTENSIONS)) {
    await broker.registry.install(join(fixtures, name));
    broker.registry.approve(name);
  }
  session = await Session.open(broker, { id: "model-budget", workspace: tmp });
}, SLOW);

afterAll(async () => {
  await session?.close();
  await broker?.close();
  rmSync(tmp, { recursive: true, force: true });
  rmSync(fixtures, { recursive: true, force: true });
});

describe.each(Object.keys(LIARS))("a provider reporting less than it delivered (%s)", (kind) => {
  test("the asker gets at most what max_tokens bears, and is charged at least what it got", async () => {
    const before = charged("asker").length;
    const maxTokens = 16;
    const answer = await ask("ask", { model: `liar-${kind}-model`, max_tokens: maxTokens });
    const bound = maxTokens * BYTES_PER_TOKEN_FLOOR;
    expect(answer.code).toBeUndefined();
    expect(answer.bytes!).toBeLessThanOrEqual(bound);
    expect(answer.deltaBytes!).toBeLessThanOrEqual(bound);
    if (answer.bytes! > 0) expect(answer.stop).toBe("max_tokens");
    // What the asker received is charged at least: text and deltas once when they are the same stream,
    // both when a provider streamed one thing and answered another.
    const received =
      kind === "split" ? answer.bytes! + answer.deltaBytes! : Math.max(answer.bytes!, answer.deltaBytes!);
    const floor = Math.ceil(received / BYTES_PER_TOKEN_FLOOR);
    expect(answer.usage!.output_tokens).toBeGreaterThanOrEqual(floor);
    expect(answer.usage!.input_tokens).toBeGreaterThan(0);
    const rows = charged("asker").slice(before);
    expect(rows).toEqual([{ decision: "allowed", bytes: answer.usage!.input_tokens + answer.usage!.output_tokens }]);
    expect(received).toBeGreaterThan(0);
  });
});

test("an honest provider's usage is what is charged", async () => {
  const before = charged("asker").length;
  const answer = await ask("ask", { model: "honest-model", max_tokens: 8 });
  expect(answer).toEqual(
    expect.objectContaining({ bytes: 4, usage: { input_tokens: 30, output_tokens: 2 }, stop: null }),
  );
  expect(charged("asker").slice(before)).toEqual([{ decision: "allowed", bytes: 32 }]);
});

test("calls left in flight are charged all they held: the day's budget bounds them", async () => {
  // 200 tokens a day; each call holds 64 + its input. The first is cancelled when its invocation answers.
  expect(await ask("stingy_fire", { model: "slow-model", max_tokens: 64 })).toEqual({ fired: true });
  await until("the cancelled call's audit row", () => charged("stingy").length === 1);
  const first = charged("stingy");
  expect(first).toHaveLength(1);
  expect(first[0]!.bytes!).toBeGreaterThanOrEqual(64);
  expect(await ask("stingy_fire", { model: "slow-model", max_tokens: 64 })).toEqual({ fired: true });
  await until("the second cancelled call's audit row", () => charged("stingy").length === 2);
  // Two cancelled calls held more than 128 of 200: a third may not start.
  const third = await ask("stingy", { model: "slow-model", max_tokens: 64 });
  expect(third.code).toBe("denied");
  expect(third.msg).toContain("(rule: model.max_tokens_per_day)");
  const rows = charged("stingy");
  expect(rows.slice(0, 2).map((r) => r.bytes! >= 64)).toEqual([true, true]);
  expect(rows[2]).toEqual({ decision: "denied", bytes: 0 });
});

test.each(["HONEST", " honest", "honest ", "honest\u200b", "hоnest", "honest\u0000", "other", "honest/../other"])(
  "the allow-list holds against the spelling %j",
  async (name) => {
    const answer = await ask("allowp", { model: "other-model", provider: name, max_tokens: 4 });
    expect(answer.code).toBe("denied");
    expect(answer.msg).toContain("(rule: model.providers)");
  },
);

test("a provider the allow-list leaves out is not chosen for a model only it offers", async () => {
  const answer = await ask("allowp", { model: "other-model", max_tokens: 4 });
  expect(answer.code).toBe("denied");
  expect(answer.msg).toContain("no provider it may ask offers model 'other-model'");
});
