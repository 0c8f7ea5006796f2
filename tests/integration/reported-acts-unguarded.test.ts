/**
 * Reported acts where the session's hooks could be bypassed, over real jailed
 * satellites: an act is never run unasked where hooks would guard it. Every
 * place an extension's code runs without a session whose hooks can be asked —
 * a provider's `complete` (daemon scope, reached through another extension's
 * `model.complete`), a managed extension's `close` while its session closes —
 * refuses the act (`act:unguarded`) instead of running it; a preparation's
 * calls while the session activates are asked of the hooks it activates
 * with; and a capability
 * call a `cap_call` hook would have been asked about is refused while the
 * session closes; and the bounds an
 * act is held to hold for every way around them: a loop of acts in one call
 * (`act:count`), arguments measured in bytes not characters, a hook's rewrite
 * held to the act's own size bound.
 */
import type { Broker } from "../../broker/broker.js";
import { kvRepository } from "../../broker/store/kv-repository.js";
import type { Session } from "../../broker/sessions/session.js";
import { MAX_ACTS_PER_INVOCATION } from "../../jail-runtime/wire/act-args.js";
import { contentText, type HookSession } from "../support/hook-session.js";
import { openWrittenSession } from "./support/write-extensions.js";

const SLOW = 120_000;
const MAIL_ACT = `[[act]]\nname = "mail.submit"\ndescription = "Submits mail."\n`;

/** Reports mail.submit to evil.example (which the watcher blocks) and says what came of it. */
const REPORT = `async function report(): Promise<string> {
  try {
    const handle = await actBefore("mail.submit", { to: "x@evil.example" });
    await handle.after("sent");
    return "ran unasked";
  } catch (err) {
    return (err instanceof ActBlocked ? "blocked: " : "refused: ") + (err as Error).message;
  }
}`;

/** A managed extension whose `handlers` report mail.submit and fetch (`tryBoth(key)` records `<key>-act`, `<key>-fetch`). */
const managedProbe = (handlers: string) => ({
  manifest: `[managed]\nclose_deadline_ms = 20000\n\n${MAIL_ACT}\n[net]\nallow = ["https://127.0.0.1"]\n`,
  code: `import { actBefore, ActBlocked, kv, net } from "@tether/cap";
import type { Managed } from "@tether/ext";
${REPORT}
async function tryBoth(key: string): Promise<void> {
  await kv.put(key + "-act", await report());
  let fetched: string;
  try {
    fetched = "fetched " + (await net.fetch("https://127.0.0.1/")).status;
  } catch (err) {
    fetched = "refused: " + (err as Error).message;
  }
  await kv.put(key + "-fetch", fetched);
}
export const tools = {};
export const managed: Managed = {
  ${handlers}
};
`,
});

const EXTENSIONS = {
  watcher: {
    manifest: `[[hook]]\nevent = "tool_call"\nmatch = ["mail.*", "big.*"]\n`,
    code: `import { hook } from "@tether/ext";
export const tools = {};
const to = (a: unknown) => String((a as { to?: unknown } | null)?.to ?? "");
export const hooks = {
  tool_call: hook("tool_call", (p) => {
    if (to(p.arguments).endsWith("@evil.example")) return { block: "no mail to evil.example" };
    if (to(p.arguments) === "grow") return { arguments: { to: "x".repeat(70 * 1024) } };
    return {};
  }),
};
`,
  },
  // A provider that reports the act from its complete (daemon scope).
  postman: {
    manifest:
      `[[provider]]\nname = "postman"\ndescription = "Reports mail from its completion."\n` +
      `models = [{ id = "post-model", context_window = 1000 }]\n\n${MAIL_ACT}`,
    code: `import { actBefore, ActBlocked } from "@tether/cap";
import type { Provider } from "@tether/ext";
${REPORT}
export const providers = { postman: (async () => ({ text: await report(), usage: { input_tokens: 1, output_tokens: 1 } })) as Provider };
`,
  },
  asker: {
    manifest:
      `[[tool]]\nname = "ask"\ndescription = "Asks the postman's model."\n\n` +
      `[model]\nmax_tokens_per_call = 512\nmax_tokens_per_day = 100000\n`,
    code: `import { model } from "@tether/cap";
import { outcome, text, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = {
  ask: async () => outcome([text((await model.complete({ model: "post-model",
    messages: [{ role: "user", content: "go" }], max_tokens: 512 })).text)]),
};
`,
  },
  // Guards every fetch: a cap_call hook that blocks them all.
  fence: {
    manifest: `[[hook]]\nevent = "cap_call"\nmatch = ["net.fetch"]\n`,
    code: `import { hook } from "@tether/ext";
export const tools = {};
export const hooks = { cap_call: hook("cap_call", () => ({ block: "fence blocks every fetch" })) };
`,
  },
  // Reports the act and fetches from its preparation, while the session activates, and from its close handler,
  // while the session closes; records what came of each (prep-act, prep-fetch, close-act, close-fetch).
  prepper: managedProbe('prepare: async () => { await tryBoth("prep"); return {}; },'),
  closer: managedProbe('prepare: () => ({}),\n  close: () => tryBoth("close"),'),
  looper: {
    manifest:
      `[[tool]]\nname = "loop"\ndescription = "Reports acts until refused."\n\n` +
      `[[tool]]\nname = "wide"\ndescription = "Reports an act with wide characters."\n\n` +
      `[[tool]]\nname = "grow"\ndescription = "Reports an act a hook rewrites past the bound."\n\n` +
      `[[act]]\nname = "big.one"\ndescription = "An act."\n`,
    code: `import { actBefore } from "@tether/cap";
import { outcome, text, type Tool } from "@tether/ext";
const attempt = async (args: unknown) => {
  try {
    const handle = await actBefore("big.one", args);
    await handle.after("done");
    return JSON.stringify(handle.arguments).length;
  } catch (err) {
    return (err as Error).message;
  }
};
export const tools: Record<string, Tool> = {
  loop: async () => {
    let n = 0;
    for (;;) {
      const got = await attempt({ n });
      if (typeof got === "string") return outcome([text(n + " then " + got)]);
      n++;
    }
  },
  // 40,000 characters, 80,000 bytes of UTF-8: past the 64 KiB bound.
  wide: async () => outcome([text(String(await attempt({ to: "é".repeat(40000) })))]),
  grow: async () => outcome([text(String(await attempt({ to: "grow" })))]),
};
`,
  },
} as const;

let opened: HookSession;
let broker: Broker;
let session: Session;

beforeAll(async () => {
  // Long deadlines: a probe that fails would hang until one passed; it must fail on what it answers.
  opened = await openWrittenSession("tether-acts-unguarded-", EXTENSIONS, "acts-u", { deadlineMs: 60_000 });
  ({ broker, session } = opened);
}, SLOW);

afterAll(() => opened?.close());

/** The act audit rows of `extension`: decision and rule. */
function actRows(extension: string): { decision: string; rule: string }[] {
  broker.ledger.flush();
  return broker.store.sqlite
    .prepare("select decision, rule from cap_audit where extension = ? and capability like 'act.%' order by id")
    .all(extension) as { decision: string; rule: string }[];
}

test(
  "from a provider's complete (daemon scope): refused, never run unasked",
  async () => {
    const report = await session.callTool("ask", "{}");
    expect(report.outcome.ok).toBe(true);
    expect(contentText(report.outcome)).toMatch(/^refused: act\.before: 'mail\.submit' cannot be reported here/);
    expect(actRows("postman")).toEqual([{ decision: "denied", rule: "act:unguarded" }]);
  },
  SLOW,
);

test(
  "a loop of acts in one call stops at the bound",
  async () => {
    const report = await session.callTool("loop", "{}");
    expect(contentText(report.outcome)).toMatch(
      new RegExp(`^${MAX_ACTS_PER_INVOCATION} then act\\.before: this invocation already reported`),
    );
  },
  SLOW,
);

test("arguments are measured in bytes: 40,000 wide characters are past 64 KiB", async () => {
  const report = await session.callTool("wide", "{}");
  expect(contentText(report.outcome)).toContain("are more than 65536 bytes of JSON");
});

test("a hook's rewrite past the act's size bound is not taken: the act runs with its own arguments", async () => {
  const report = await session.callTool("grow", "{}");
  expect(contentText(report.outcome)).toBe(String(JSON.stringify({ to: "grow" }).length));
  expect(report.notes.join("\n")).toContain("the rewritten arguments are more than 65536 bytes of JSON");
});

/** What `extension` recorded under `key` (its kv). */
function recorded(key: string, extension = "closer"): string | null {
  const row = kvRepository(broker.store).get({ extension, session: null }, key);
  return row === null ? null : (JSON.parse(row.value.toString("utf8")) as string);
}

test("from a preparation while the session activates: the hooks it activates with are asked", () => {
  expect(recorded("prep-act", "prepper")).toBe("blocked: Blocked by 'watcher': no mail to evil.example");
  expect(recorded("prep-fetch", "prepper")).toContain("Blocked by a hook: fence blocks every fetch");
});

test(
  "from a managed close while the session closes (last: it closes the session): an act and a guarded fetch refused",
  async () => {
    await session.close();
    expect(recorded("close-act")).toMatch(/^refused: act\.before: 'mail\.submit' cannot be reported here — session/);
    expect(actRows("closer")).toEqual([{ decision: "denied", rule: "act:unguarded" }]);
    // The fence's cap_call hook can no longer be asked: the fetch it would have been asked about is not made.
    expect(recorded("close-fetch")).toContain(
      "Blocked by a hook: session 'acts-u' is closing: 'fence''s cap_call hook can no longer be asked",
    );
    // Its kv.put, which no hook guards, was made (the records above).
  },
  SLOW,
);
