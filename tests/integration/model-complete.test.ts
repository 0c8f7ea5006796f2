/**
 * `model.complete` over real jailed satellites: an extension asks a model
 * from inside a tool, through the example providers against the fake
 * OpenAI- and Anthropic-compatible servers (tests/support/provider-home.ts).
 * The text comes back with the deltas as the tool's partials, a `usage` hook
 * hears it with `origin: "extension:<name>"`, the audit has its row (target
 * `<provider>/<model>`, the tokens it used); refused when not declared, past
 * the per-call and per-day budgets, for a provider the approval does not list,
 * while a run of the session is active, by a `cap_call` hook; cancelled when
 * the session closes; the session's provider preference picks the provider;
 * and the fold-results example's model strategy summarises through the fake.
 */
import { join } from "node:path";
import { Session } from "../../broker/sessions/session.js";
import { openProviderHome, type ProviderHome } from "../support/provider-home.js";
import { REPO } from "../support/satellites.js";
import { writeExtensions } from "./support/write-extensions.js";

const SLOW = 120_000;
let p: ProviderHome;
let session: Session;

/** A tool `ask` that calls model.complete with its arguments and answers the reply, or the refusal, as JSON. */
const ASKER = `import { model, CapError } from "@tether/cap";
import { outcome, json, type Tool } from "@tether/ext";
const ask: Tool = async (args, ctx) => {
  const a = args as { model: string; provider?: string; max_tokens?: number };
  try {
    const deltas: string[] = [];
    const reply = await model.complete(
      {
        model: a.model,
        ...(a.provider !== undefined ? { provider: a.provider } : {}),
        messages: [{ role: "user", content: "say hello" }],
        max_tokens: a.max_tokens ?? 32,
      },
      { onDelta: (d) => deltas.push(d) },
    );
    return outcome([json({ reply, deltas })]);
  } catch (err) {
    if (err instanceof CapError) return outcome([json({ code: err.code, msg: err.message })]);
    throw err;
  }
};
export const tools: Record<string, Tool> = { ask };
`;

const ASK_ROW = `[[tool]]
name = "ask"
description = "Asks a model."
`;

const model = (perCall: number, perDay: number, providers?: string[]) =>
  `[model]\n${providers !== undefined ? `providers = ${JSON.stringify(providers)}\n` : ""}` +
  `max_tokens_per_call = ${perCall}\nmax_tokens_per_day = ${perDay}\n`;

const EXTENSIONS = {
  asker: { manifest: `${ASK_ROW}${model(64, 1_000_000)}`, code: ASKER },
  stingy: { manifest: `${ASK_ROW}${model(64, 80)}`, code: ASKER },
  undeclared: { manifest: ASK_ROW, code: ASKER },
  "only-anthropic": { manifest: `${ASK_ROW}${model(64, 10_000, ["local-anthropic"])}`, code: ASKER },
  // Hears every usage event: each payload under usage-<n> in its kv, read back by its tool.
  meter: {
    manifest: `[[hook]]\nevent = "usage"\n\n[[tool]]\nname = "heard"\ndescription = "The usage events heard."\n`,
    code: `import { kv } from "@tether/cap";
import { hook, outcome, json, type Tool } from "@tether/ext";
let n = 0;
export const hooks = {
  usage: hook("usage", async (payload) => { await kv.put(\`usage-\${n++}\`, payload); return {}; }),
};
export const tools: Record<string, Tool> = {
  heard: async () => {
    const keys = await kv.list("usage-");
    const all = [];
    for (const k of keys) all.push(await kv.get(k));
    return outcome([json(all)]);
  },
};
`,
  },
  // Blocks model.complete while its kv says so; remembers the targets it was shown.
  guard: {
    manifest:
      `[[hook]]\nevent = "cap_call"\nmatch = ["model.complete"]\n\n` +
      `[[command]]\nname = "block"\ndescription = "Blocks model calls (on) or lets them through (off)."\n\n` +
      `[[tool]]\nname = "shown"\ndescription = "The targets shown."\n`,
    code: `import { kv } from "@tether/cap";
import { hook, outcome, json, type Command, type Tool } from "@tether/ext";
export const hooks = {
  cap_call: hook("cap_call", async (payload) => {
    const seen = ((await kv.get("seen")) as string[] | null) ?? [];
    await kv.put("seen", [...seen, payload.target]);
    return (await kv.get("block")) === true ? { block: "no model calls now" } : {};
  }),
};
export const commands: Record<string, Command> = {
  block: async (args) => { await kv.put("block", args.trim() === "on"); return "ok"; },
};
export const tools: Record<string, Tool> = { shown: async () => outcome([json(await kv.get("seen"))]) };
`,
  },
  // A provider that says it started, then waits until its completion is cancelled.
  "slow-provider": {
    manifest:
      `[[provider]]\nname = "slow"\ndescription = "Never answers by itself."\n` +
      `models = [{ id = "slow-model", context_window = 1000 }]\n`,
    code: `import type { Provider } from "@tether/ext";
const slow: Provider = async (_request, ctx) => {
  ctx.report("started");
  await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
  return { text: "too late", usage: { input_tokens: 0, output_tokens: 0 } };
};
export const providers = { slow };
`,
  },
};

type Asked = {
  reply?: { text: string; provider: string; model: string; usage: { input_tokens: number; output_tokens: number } };
  deltas?: string[];
  code?: string;
  msg?: string;
};

async function ask(tool: string, args: Record<string, unknown>, s = session, partials: string[] = []): Promise<Asked> {
  const report = await s.callTool(tool, JSON.stringify(args), { onReport: (t) => partials.push(t) });
  if (!report.outcome.ok) throw new Error(`${tool}: ${report.outcome.error.code}: ${report.outcome.error.msg}`);
  const block = report.outcome.value.content[0] as { type: string; json?: unknown };
  return (typeof block.json === "string" ? JSON.parse(block.json) : block.json) as Asked;
}

/** The tool `ask` of extension `ext` (each test extension serves it under its own name). */
const tool = (ext: string) => (ext === "asker" ? "ask" : `${ext}_ask`);

beforeAll(async () => {
  p = await openProviderHome("tether-model-complete-");
  // Each asker serves its tool under its own name, so one session holds them all.
  const renamed = Object.fromEntries(
    Object.entries(EXTENSIONS).map(([name, files]) => [
      name,
      files.code.includes("const ask: Tool") && name !== "asker"
        ? {
            manifest: files.manifest.replace('name = "ask"', `name = "${tool(name)}"`),
            code: files.code.replace("{ ask }", `{ "${tool(name)}": ask }`),
          }
        : files,
    ]),
  );
  const root = writeExtensions("tether-model-ext-", renamed);
  for (const name of Object.keys(EXTENSIONS)) {
    await p.broker.registry.install(join(root, name));
    p.broker.registry.approve(name);
  }
  await p.broker.registry.install(join(REPO, "manifests", "fold-results"));
  p.broker.registry.approve("fold-results");
  session = await Session.open(p.broker, { id: "model-calls", workspace: p.tmp });
}, SLOW);
afterAll(async () => {
  await session?.close();
  await p?.close();
});

/** The usage payloads the meter's hook stored, once there are `n` (its hook runs after the call answered). */
async function heardUsage(n: number): Promise<unknown[]> {
  for (let tries = 0; tries < 3000; tries++) {
    const all = (await ask("heard", {})) as unknown as unknown[];
    if (all.length >= n) return all;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`the usage hook did not hear ${n} calls`);
}

const auditRows = (extension: string) => {
  p.broker.ledger.flush();
  return p.broker.store.sqlite
    .prepare(
      "SELECT session_id, target, decision, rule, bytes FROM cap_audit WHERE capability = 'model.complete' AND " +
        "extension = ? ORDER BY id",
    )
    .all(extension) as { session_id: string; target: string; decision: string; rule: string; bytes: number }[];
};

test(
  "a call that works: the text and usage back, each delta a partial of the tool, a usage hook hears it, one audit row",
  async () => {
    const partials: string[] = [];
    const before = p.anthropic.requests.length;
    const asked = await ask("ask", { model: "shared" }, session, partials);
    expect(asked.reply).toMatchObject({
      text: "Hello, world!",
      provider: "local-anthropic",
      model: "shared",
      usage: { input_tokens: 12, output_tokens: 4 },
    });
    expect(asked.deltas).toEqual(["Hello", ", ", "world", "!"]);
    expect(partials).toEqual(["Hello", ", ", "world", "!"]);
    expect(p.anthropic.requests.length).toBe(before + 1);
    expect(auditRows("asker")).toEqual([
      { session_id: "model-calls", target: "local-anthropic/shared", decision: "allowed", rule: "model", bytes: 16 },
    ]);
    // The provider's own invocation: kind complete in the daemon scope.
    const daemon = p.broker.store.sqlite
      .prepare("SELECT count(*) AS n FROM invocations WHERE session_id = '@daemon' AND kind = 'complete'")
      .get() as { n: number };
    expect(daemon.n).toBeGreaterThan(0);
    expect(await heardUsage(1)).toEqual([
      expect.objectContaining({ origin: "extension:asker", model: "shared", input_tokens: 12, output_tokens: 4 }),
    ]);
  },
  SLOW,
);

test("refused when the manifest declares no [model], naming the rule and what to change; audited", async () => {
  const asked = await ask(tool("undeclared"), { model: "shared" });
  expect(asked.code).toBe("denied");
  expect(asked.msg).toContain("'undeclared' has no approved [model]; declare [model]");
  expect(asked.msg).toContain("(rule: model)");
  expect(auditRows("undeclared")).toEqual([expect.objectContaining({ decision: "denied", rule: "model" })]);
});

test("refused past the per-call budget, and past the day's budget once earlier calls used it", async () => {
  const perCall = await ask("ask", { model: "shared", max_tokens: 65 });
  expect(perCall.code).toBe("denied");
  expect(perCall.msg).toContain("asks for max_tokens 65; the approval allows at most 64 a call");
  expect(perCall.msg).toContain("(rule: model.max_tokens_per_call)");
  // stingy: 80 tokens a day. A call holds its max_tokens and its input's floor (the request's 85 bytes as JSON:
  // 11). The first holds 75 and uses 16 (as reported: above the floors); the second would hold 75 of the 64 left.
  const first = await ask(tool("stingy"), { model: "shared", max_tokens: 64 });
  expect(first.reply?.text).toBe("Hello, world!");
  const second = await ask(tool("stingy"), { model: "shared", max_tokens: 64 });
  expect(second.code).toBe("denied");
  expect(second.msg).toContain("may use up to 75 tokens (max_tokens 64 and at least 11 of input)");
  expect(second.msg).toContain("'stingy' has 64 of its 80 tokens a day left");
  expect(second.msg).toContain("(rule: model.max_tokens_per_day)");
  // What is left still fits a smaller call.
  expect((await ask(tool("stingy"), { model: "shared", max_tokens: 20 })).reply?.text).toBe("Hello, world!");
});

test("a provider the approval does not list is refused; the listed one answers", async () => {
  const other = await ask(tool("only-anthropic"), { model: "shared", provider: "local-openai" });
  expect(other.code).toBe("denied");
  expect(other.msg).toContain("the approval allows only local-anthropic");
  expect(other.msg).toContain("(rule: model.providers)");
  expect((await ask(tool("only-anthropic"), { model: "shared" })).reply?.provider).toBe("local-anthropic");
});

test("the session's provider preference decides the provider", async () => {
  const openaiBefore = p.openai.requests.length;
  session.preferProviders({ rank: ["local-openai"] });
  try {
    const asked = await ask("ask", { model: "shared" });
    expect(asked.reply?.provider).toBe("local-openai");
    expect(p.openai.requests.length).toBe(openaiBefore + 1);
    session.preferProviders({ exclude: ["local-openai", "local-anthropic"] });
    const none = await ask("ask", { model: "shared" });
    expect(none.code).toBe("denied");
    expect(none.msg).toContain("(rule: model.provider)");
  } finally {
    session.preferProviders(null);
  }
  expect((await ask("ask", { model: "shared" })).reply?.provider).toBe("local-anthropic");
});

test("refused while a run is active (before_agent_start fired, agent_end not yet); allowed once the turn ends", async () => {
  await session.fire("before_agent_start", { prompt: "hello" });
  const during = await ask("ask", { model: "shared" });
  expect(during.code).toBe("busy_session");
  expect(during.msg).toContain("has a run active (before_agent_start fired, the turn has not ended)");
  expect(during.msg).toContain("(rule: session.run_active)");
  await session.fire("agent_end", { reply: "hi", held: 0 });
  expect((await ask("ask", { model: "shared" })).reply?.text).toBe("Hello, world!");
  expect(auditRows("asker")).toContainEqual(
    expect.objectContaining({ decision: "denied", rule: "session.run_active" }),
  );
});

test("a cap_call hook sees model.complete with its provider/model target, and its block refuses the call", async () => {
  await session.runCommand("/block on");
  try {
    const blocked = await ask("ask", { model: "shared" });
    expect(blocked.code).toBe("denied");
    expect(blocked.msg).toContain("Blocked by a hook: no model calls now (rule: hook:guard)");
  } finally {
    await session.runCommand("/block off");
  }
  const shown = (await ask("shown", {})) as unknown as string[];
  expect(shown).toContain("local-anthropic/shared");
  expect(auditRows("asker")).toContainEqual(expect.objectContaining({ decision: "denied", rule: "hook:guard" }));
});

test("the fold-results model strategy summarises through the fake provider", async () => {
  const messages = [
    { role: "user", content: "Why does the build fail?" },
    { role: "tool", name: "ls", content: "src/ tests/" },
    { role: "assistant", content: "Looking." },
    { role: "user", content: "a" },
    { role: "user", content: "b" },
    { role: "user", content: "c" },
    { role: "user", content: "d" },
  ];
  const before = p.openai.requests.length;
  const report = await session.compact({
    messages,
    reason: "requested",
    budget: 400,
    strategy: "summarise-with-model",
  });
  expect(report.outcome.ok ? report.outcome : report.outcome.error).toMatchObject({ summary: "Hello, world!" });
  expect(session.folds(report.outcome.ok ? report.outcome.compactionId : -1)).toEqual([
    expect.objectContaining({ from: 0, to: 2, text: "Hello, world!" }),
  ]);
  expect(p.openai.requests.length).toBe(before + 1);
  const sent = JSON.stringify(p.openai.requests.at(-1)!.body);
  expect(sent).toContain("tool ls: src/ tests/");
  // Charged: the fake's 12 + 4 tokens, but the prompt's floor (one token per 8 bytes of the request) is more.
  const rows = auditRows("fold-results");
  expect(rows).toEqual([expect.objectContaining({ target: "local-openai/gpt-4o-mini", decision: "allowed" })]);
  expect(rows[0]!.bytes).toBeGreaterThan(16);
});

test(
  "a call in flight when its session begins to close is cancelled: busy_session, rule session.closing",
  async () => {
    const closing = await Session.open(p.broker, { id: "model-closing", workspace: p.tmp });
    const partials: string[] = [];
    const asked = ask("ask", { model: "slow-model" }, closing, partials);
    // The slow provider says it started: the call is in flight.
    for (let tries = 0; partials.length === 0; tries++) {
      if (tries > 3000) throw new Error("the slow provider never started");
      await new Promise((r) => setTimeout(r, 10));
    }
    const closed = closing.close();
    const answer = await asked;
    await closed;
    expect(answer.code).toBe("busy_session");
    expect(answer.msg).toContain("model.complete was cancelled: session 'model-closing' is closing");
    expect(answer.msg).toContain("(rule: session.closing)");
    expect(auditRows("asker")).toContainEqual(
      expect.objectContaining({ session_id: "model-closing", decision: "denied", rule: "session.closing" }),
    );
  },
  SLOW,
);
