/**
 * An extension is never asked again by a call it waits on (broker/base/waits.ts),
 * over real jailed satellites, one probe per way a capability call asks other
 * extensions:
 *  - `model.complete` → a provider whose own `model.complete` would go back to
 *    the first provider (pa → pb → pa, daemon scope: the satellites every
 *    session shares);
 *  - `search.query` → a search provider whose `kv.get` fires `cap_call` →
 *    the searching tool's own extension's `cap_call` hook;
 *  - `act.before` → a hook that searches → a search provider of the reporting
 *    extension.
 * Each used to wait for its own answer until a deadline killed a satellite.
 * Every extension holds one invocation at a time, so a re-entry would hang: the
 * deadlines are long, and each probe checks the call answered with what the
 * chain left out, and the note or refusal naming it.
 */
import type { Broker } from "../../broker/broker.js";
import type { Session } from "../../broker/sessions/session.js";
import { contentText, type HookSession } from "../support/hook-session.js";
import { openWrittenSession } from "./support/write-extensions.js";

const SLOW = 120_000;

const provider = (name: string, model: string) =>
  `[[provider]]\nname = "${name}"\ndescription = "provider ${name}"\n` +
  `models = [{ id = "${model}", context_window = 100000 }]\n\n` +
  `[model]\nmax_tokens_per_call = 64\nmax_tokens_per_day = 100000\n`;

/** A provider that asks `other` once more per level, down to 4 messages. */
const recurser = (mine: string, other: string, named: boolean) => `import { model } from "@tether/cap";
import type { Provider } from "@tether/ext";
const p: Provider = async (request) => {
  const depth = request.messages.length;
  if (depth >= 4) return { text: "bottom", usage: { input_tokens: 1, output_tokens: 1 } };
  try {
    const inner = await model.complete({ model: "${other}", ${named ? `provider: "${other.replace("-model", "")}", ` : ""}
      messages: [...request.messages, { role: "user", content: "${mine}" }], max_tokens: 64 });
    return { text: "${mine}>" + inner.text, usage: { input_tokens: 1, output_tokens: 1 } };
  } catch (err) {
    return { text: "${mine}!" + (err as Error).message, usage: { input_tokens: 1, output_tokens: 1 } };
  }
};
export const providers = { "${mine}": p };
`;

const EXTENSIONS = {
  pa: { manifest: provider("pa", "pa-model"), code: recurser("pa", "pb-model", false) },
  pb: { manifest: provider("pb", "pb-model"), code: recurser("pb", "pa-model", false) },
  // Names its provider: the refusal says why it cannot be asked.
  pc: { manifest: provider("pc", "pc-model"), code: recurser("pc", "pd-model", true) },
  pd: { manifest: provider("pd", "pd-model"), code: recurser("pd", "pc-model", true) },
  asker: {
    manifest:
      `[[tool]]\nname = "ask"\ndescription = "Asks a model."\n\n` +
      `[model]\nmax_tokens_per_call = 64\nmax_tokens_per_day = 100000\n`,
    code: `import { model } from "@tether/cap";
import { outcome, text, type Tool } from "@tether/ext";
const ask: Tool = async (args) => {
  const reply = await model.complete({ model: (args as { model: string }).model,
    messages: [{ role: "user", content: "go" }], max_tokens: 64 });
  return outcome([text(reply.text)]);
};
export const tools = { ask };
`,
  },
  // Searches from a tool, and hooks cap_call (so a provider's kv.get would ask it).
  seeker: {
    manifest:
      `[capabilities]\nsearch = true\n\n[[tool]]\nname = "seek"\ndescription = "Searches."\n\n` +
      `[[hook]]\nevent = "cap_call"\nmatch = ["kv.get"]\n`,
    code: `import { search } from "@tether/cap";
import { hook, outcome, text, type Tool } from "@tether/ext";
const seek: Tool = async () => {
  const { results, notes } = await search.query("wait");
  return outcome([text(JSON.stringify({ titles: results.map((r) => r.title), notes }))]);
};
export const tools = { seek };
export const hooks = { cap_call: hook("cap_call", () => ({ notes: ["seeker's cap_call hook"] })) };
`,
  },
  index: {
    manifest: `[[search]]\nname = "index"\ndescription = "Reads its kv, then answers."\n`,
    code: `import { kv } from "@tether/cap";
import type { SearchProvider } from "@tether/ext";
export const tools = {};
const index: SearchProvider = async (query) => [{ title: "index " + query + " " + String(await kv.get("k")) }];
export const search = { index };
`,
  },
  // Reports an act from a tool, and serves search (so a hook that searches would ask it).
  reporter: {
    manifest:
      `[[tool]]\nname = "send"\ndescription = "Reports an act."\n\n` +
      `[[act]]\nname = "mail.send"\ndescription = "Sends mail."\n\n` +
      `[[search]]\nname = "outbox"\ndescription = "The reporter's outbox."\n`,
    code: `import { act } from "@tether/cap";
import { outcome, text, type SearchProvider, type Tool } from "@tether/ext";
const send: Tool = async () => {
  const sent = await act("mail.send", { to: "a@b.example" }, async (a) => "sent to " + (a as { to: string }).to);
  return outcome([text(String(sent))]);
};
export const tools = { send };
export const search = { outbox: (() => [{ title: "outbox" }]) as SearchProvider };
`,
  },
  // Asks a model, then reports an act; serves search too (so a hook that searches would ask it).
  alpha: {
    manifest:
      `[[tool]]\nname = "go"\ndescription = "Asks a model, then reports an act."\n\n` +
      `[[act]]\nname = "a.do"\ndescription = "An act."\n\n` +
      `[[search]]\nname = "alpha-index"\ndescription = "Alpha's index."\n\n` +
      `[model]\nmax_tokens_per_call = 64\nmax_tokens_per_day = 100000\n`,
    code: `import { act, model } from "@tether/cap";
import { outcome, text, type SearchProvider, type Tool } from "@tether/ext";
const go: Tool = async () => {
  await model.complete({ model: "quick-model", messages: [{ role: "user", content: "go" }], max_tokens: 8 });
  // Lets the usage event reach beta's hook before the act asks beta.
  await new Promise((r) => setTimeout(r, 200));
  return outcome([text(String(await act("a.do", {}, () => "done")))]);
};
export const tools = { go };
export const search = { "alpha-index": (() => [{ title: "alpha" }]) as SearchProvider };
`,
  },
  quick: {
    manifest:
      `[[provider]]\nname = "quick"\ndescription = "Answers at once."\n` +
      `models = [{ id = "quick-model", context_window = 1000 }]\n`,
    code: `import type { Provider } from "@tether/ext";
export const providers = { quick: (async () => ({ text: "ok", usage: { input_tokens: 1, output_tokens: 1 } })) as Provider };
`,
  },
  // Searches when told of a model call's usage; hooks alpha's act.
  beta: {
    manifest:
      `[capabilities]\nsearch = true\n\n[[hook]]\nevent = "usage"\n\n` +
      `[[hook]]\nevent = "tool_call"\nmatch = ["a.do"]\n`,
    code: `import { search } from "@tether/cap";
import { hook } from "@tether/ext";
export const tools = {};
export const hooks = {
  usage: hook("usage", async (p) => {
    if (p.origin === "extension:alpha") await search.query("usage");
    return {};
  }),
  tool_call: hook("tool_call", () => ({})),
};
`,
  },
  // Its tool_call hook searches before it lets a call through.
  checker: {
    manifest: `[capabilities]\nsearch = true\n\n[[hook]]\nevent = "tool_call"\nmatch = ["mail.send"]\n`,
    code: `import { search } from "@tether/cap";
import { hook } from "@tether/ext";
export const tools = {};
export const hooks = {
  tool_call: hook("tool_call", async () => {
    const { results, notes } = await search.query("mail");
    return { notes: ["checker saw " + results.map((r) => r.title).join(",") + " | " + notes.join(" | ")] };
  }),
};
`,
  },
} as const;

let opened: HookSession;
let broker: Broker;
let session: Session;

beforeAll(async () => {
  // Long deadlines: a probe that fails would hang until one passed; it must fail on what it answers.
  opened = await openWrittenSession("tether-waits-", EXTENSIONS, "waits-1", { deadlineMs: 60_000 });
  ({ broker, session } = opened);
}, SLOW);

afterAll(() => opened?.close());

/** The ledger rows of `extension`'s invocations refused `busy` (the kernel's backstop for the chain). */
function refusedBusy(extension: string): { name: string; outcome: string }[] {
  broker.ledger.flush();
  return broker.store.sqlite
    .prepare("select name, outcome from invocations where extension = ? and outcome = 'busy' order by id")
    .all(extension) as { name: string; outcome: string }[];
}

test(
  "model.complete: pa → pb → pa is not asked (pb is told no provider it may ask offers pa-model, and why)",
  async () => {
    const report = await session.callTool("ask", JSON.stringify({ model: "pa-model" }));
    expect(report.outcome.ok).toBe(true);
    const answer = contentText(report.outcome);
    expect(answer).toMatch(/^pa>pb!/);
    expect(answer).toContain("'pa' does, but its satellite waits on this very call: ");
    expect(answer).toContain("waits-1/asker → @daemon/pa → @daemon/pb");
  },
  SLOW,
);

test(
  "model.complete naming the provider: pc → pd → pc is refused, naming the chain; nothing reached pc again",
  async () => {
    const report = await session.callTool("ask", JSON.stringify({ model: "pc-model" }));
    expect(report.outcome.ok).toBe(true);
    const answer = contentText(report.outcome);
    expect(answer).toMatch(/^pc>pd!/);
    expect(answer).toContain("provider 'pc' cannot be asked: its satellite waits on this very call");
    expect(refusedBusy("pc")).toEqual([]);
  },
  SLOW,
);

test(
  "search.query: the provider's kv.get does not ask the searching extension's own cap_call hook",
  async () => {
    const report = await session.callTool("seek", "{}");
    expect(report.outcome.ok).toBe(true);
    const answer = JSON.parse(contentText(report.outcome)) as { titles: string[]; notes: string[] };
    expect([...answer.titles].sort()).toEqual(["alpha", "index wait null", "outbox"]);
    broker.ledger.flush();
    // The hook was asked about nothing while seeker waited on the search.
    const asked = broker.store.sqlite
      .prepare("select count(*) as n from hook_traces where session_id = ? and extension = 'seeker'")
      .get(session.id) as { n: number };
    expect(asked.n).toBe(0);
  },
  SLOW,
);

test(
  "act.before: a hook that searches does not ask the reporting extension's search provider",
  async () => {
    const report = await session.callTool("send", "{}");
    expect(report.outcome.ok).toBe(true);
    expect(contentText(report.outcome)).toBe("sent to a@b.example");
    const notes = report.notes.join("\n");
    expect(notes).toContain("checker saw alpha,index mail null |");
    expect(notes).toContain("search provider 'outbox' was not asked: 'reporter' waits on this search");
    expect(refusedBusy("reporter")).toEqual([]);
  },
  SLOW,
);

test(
  "a model call's usage event: its hooks leave the asker out (beta's search does not queue behind alpha's tool)",
  async () => {
    broker.ledger.flush();
    const before = (broker.store.sqlite.prepare("select max(id) as id from invocations").get() as { id: number }).id;
    const report = await session.callTool("go", "{}");
    expect(report.outcome.ok).toBe(true);
    expect(contentText(report.outcome)).toBe("done");
    broker.ledger.flush();
    const rows = broker.store.sqlite
      .prepare(
        "select extension, kind, name, outcome from invocations where id > ? and extension in ('alpha', 'beta') " +
          "order by id",
      )
      .all(before) as { extension: string; kind: string; name: string; outcome: string }[];
    // beta heard the usage and its search answered without asking alpha's index; nothing waited out a deadline.
    expect(rows).toContainEqual({ extension: "beta", kind: "event", name: "usage", outcome: "ok" });
    expect(rows.filter((r) => r.extension === "alpha" && r.kind === "search")).toEqual([]);
    expect(rows.filter((r) => r.outcome !== "ok")).toEqual([]);
  },
  SLOW,
);

test("a call with nobody waiting still asks every provider and hook", async () => {
  const report = await session.search("plain", {});
  expect(report.results.map((r) => r.title).sort()).toEqual(["alpha", "index plain null", "outbox"]);
});
