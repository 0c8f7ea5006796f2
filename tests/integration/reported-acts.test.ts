/**
 * Reported acts (`ctx.act`, `ctx.actBefore`) over real jailed satellites: the
 * session's tool_call hooks block an act (its run never runs: the kv counter
 * stays) or rewrite its arguments (run sees the rewrite; a rewrite its
 * `[[act]] parameters` refuse is a note), its tool_result hooks withhold the
 * output; an act the manifest does not declare is refused and audited;
 * `within` is the reporting invocation's ledger row; the reporter's own hooks
 * are not asked; `[[hook]] match` globs select acts by name; the hooks'
 * context joins the tool call's report; every act is traced and audited.
 */
import type { Broker } from "../../broker/broker.js";
import { buildReview, renderReview } from "../../broker/registry/review.js";
import type { Session } from "../../broker/sessions/session.js";
import { contentText, openHookSession, type HookSession } from "../support/hook-session.js";
import { writeExtensions } from "./support/write-extensions.js";

const MAILER_MANIFEST = `
[[tool]]
name = "send"
description = "Sends mail through ctx.act."
parameters = { type = "object", properties = { to = { type = "string" }, body = { type = "string" } } }

[[tool]]
name = "send_later"
description = "Sends mail through the halves: actBefore, then handle.after."

[[tool]]
name = "send_failing"
description = "An act whose run throws."

[[tool]]
name = "charge"
description = "Reports payment.charge."

[[tool]]
name = "undeclared"
description = "Reports an act its manifest does not declare."

[[tool]]
name = "runs"
description = "How often an act's run ran."

[[act]]
name = "mail.submit"
description = "Submits one mail for delivery."
parameters = { type = "object", properties = { to = { type = "string" }, body = { type = "string" } }, required = ["to"] }

[[act]]
name = "payment.charge"
description = "Charges a card."

# Its own hook would block every mail act: it must never be asked about its own.
[[hook]]
event = "tool_call"
match = ["mail.*"]
`;

const MAILER_CODE = `
import { kv } from "@tether/cap";
import { ActBlocked, hook, json, outcome, refuse, text, type Tool } from "@tether/ext";

async function bump(): Promise<number> {
  const n = Number((await kv.get("runs")) ?? 0) + 1;
  await kv.put("runs", n);
  return n;
}

const answer = async (work: () => Promise<unknown>) => {
  try {
    return outcome([json(await work())]);
  } catch (err) {
    if (err instanceof ActBlocked) return refuse(\`\${err.phase}: \${err.message}\`);
    throw err;
  }
};

export const tools: Record<string, Tool> = {
  send: (args, ctx) =>
    answer(() => ctx.act("mail.submit", args, async (given) => ({ ran: given, run: await bump() }))),
  send_later: (args, ctx) =>
    answer(async () => {
      const handle = await ctx.actBefore("mail.submit", args);
      const run = await bump();
      return handle.after({ ran: handle.arguments, run, callId: handle.callId });
    }),
  send_failing: (_args, ctx) =>
    answer(() => ctx.act("mail.submit", { to: "x@example.com" }, () => { throw new Error("smtp is down"); })),
  charge: (_args, ctx) => answer(() => ctx.act("payment.charge", { cents: 100 }, () => ({ charged: 100 }))),
  undeclared: (_args, ctx) => ctx.act("mail.undeclared", {}, () => outcome([text("ran")])),
  runs: async () => outcome([text(String((await kv.get("runs")) ?? 0))]),
};

export const hooks = {
  tool_call: hook("tool_call", () => ({ block: "mailer's own hook was asked about its own act" })),
};
`;

const WATCHER_MANIFEST = `
[[hook]]
event = "tool_call"
match = ["mail.*"]

[[hook]]
event = "tool_result"
match = ["mail.*"]
`;

const WATCHER_CODE = `
import { hook, proceed } from "@tether/ext";

const to = (args: unknown) => String((args as { to?: unknown } | null)?.to ?? "");

export const tools = {};

export const hooks = {
  tool_call: hook("tool_call", (p) => {
    if (to(p.arguments).endsWith("@evil.example")) return { block: "no mail to evil.example" };
    if (to(p.arguments) === "rewrite@example.com")
      return { arguments: { to: "safe@example.com", body: "rewritten" }, context: "watcher rewrote" };
    if (to(p.arguments) === "badrewrite@example.com") return { arguments: { to: 5 } };
    return { context: \`watcher saw \${p.tool} within \${JSON.stringify(p.within ?? null)}\` };
  }),
  tool_result: hook("tool_result", (p) => {
    if (JSON.stringify(p.result).includes("private@example.com")) return { block: "that output stays private" };
    return p.ok ? proceed : { notes: [\`watcher saw \${p.tool} fail: \${JSON.stringify(p.result)}\`] };
  }),
};
`;

let opened: HookSession;
let broker: Broker;
let session: Session;

/** How often the mailer's act runs ran (its kv counter, read through its own tool). */
async function runs(): Promise<number> {
  return Number(contentText((await session.callTool("runs", "{}")).outcome));
}

function json(outcome: { ok: boolean; value?: unknown }): Record<string, unknown> {
  return JSON.parse(contentText(outcome)) as Record<string, unknown>;
}

function traces(subject: string): { event: string; extension: string; answer: string; about: number | null }[] {
  broker.ledger.flush();
  return broker.store.sqlite
    .prepare(
      "select event, extension, answer, about_invocation_id as about from hook_traces " +
        "where session_id = ? and subject = ? order by id",
    )
    .all(session.id, subject) as { event: string; extension: string; answer: string; about: number | null }[];
}

function audits(invocationId: number | null): { capability: string; target: string; decision: string; rule: string }[] {
  broker.ledger.flush();
  return broker.store.sqlite
    .prepare(
      "select capability, target, decision, rule from cap_audit where invocation_id = ? and capability like 'act.%' " +
        "order by id",
    )
    .all(invocationId) as { capability: string; target: string; decision: string; rule: string }[];
}

beforeAll(async () => {
  const root = writeExtensions("tether-acts-", {
    mailer: { manifest: MAILER_MANIFEST, code: MAILER_CODE },
    watcher: { manifest: WATCHER_MANIFEST, code: WATCHER_CODE },
  });
  opened = await openHookSession("tether-acts-home-", root, ["mailer", "watcher"], "acts-1");
  ({ broker, session } = opened);
}, 60_000);

afterAll(async () => {
  await opened?.close();
});

test("review shows each act the extension may report", () => {
  const installed = broker.registry.require("mailer");
  const text = renderReview(buildReview(installed, broker.registry.status(installed), null), installed);
  expect(text).toContain("It reports act mail.submit: Submits one mail for delivery.");
  expect(text).toContain("It reports act payment.charge: Charges a card.");
});

test("an act the hooks let through runs once; within is the reporting invocation's ledger row", async () => {
  const before = await runs();
  const report = await session.callTool("send", JSON.stringify({ to: "ada@example.com", body: "hi" }));
  expect(report.outcome.ok).toBe(true);
  expect(json(report.outcome)).toEqual({ ran: { to: "ada@example.com", body: "hi" }, run: before + 1 });
  expect(await runs()).toBe(before + 1);
  // The watcher's context about the act joined the tool call's report, naming the call that ran it.
  expect(report.context).toEqual([
    `watcher saw mail.submit within ${JSON.stringify({
      invocation_id: report.invocationId,
      extension: "mailer",
      kind: "tool",
      name: "send",
      call_id: report.callId,
    })}`,
  ]);
  expect(traces("mail.submit").slice(-2)).toEqual([
    { event: "tool_call", extension: "watcher", answer: "context", about: report.invocationId },
    { event: "tool_result", extension: "watcher", answer: "proceed", about: report.invocationId },
  ]);
  expect(audits(report.invocationId)).toEqual([
    { capability: "act.before", target: "mail.submit", decision: "allowed", rule: "act" },
    { capability: "act.after", target: "mail.submit", decision: "allowed", rule: "act" },
  ]);
});

test("a blocked act never runs, and the tool hands back the hook's reason", async () => {
  const before = await runs();
  const report = await session.callTool("send", JSON.stringify({ to: "eve@evil.example", body: "hi" }));
  expect(report.outcome).toEqual({
    ok: false,
    error: { code: "refused", msg: "before: Blocked by 'watcher': no mail to evil.example" },
  });
  expect(await runs()).toBe(before);
  expect(traces("mail.submit").at(-1)).toEqual({
    event: "tool_call",
    extension: "watcher",
    answer: "block",
    about: report.invocationId,
  });
  expect(audits(report.invocationId)).toEqual([
    { capability: "act.before", target: "mail.submit", decision: "denied", rule: "hook:watcher" },
  ]);
});

test("a rewrite is what run receives", async () => {
  const report = await session.callTool("send", JSON.stringify({ to: "rewrite@example.com", body: "original" }));
  expect(json(report.outcome)["ran"]).toEqual({ to: "safe@example.com", body: "rewritten" });
  expect(report.context).toEqual(["watcher rewrote"]);
});

test("a rewrite the act's parameters refuse is a note, and the reported arguments run", async () => {
  const report = await session.callTool("send", JSON.stringify({ to: "badrewrite@example.com" }));
  expect(json(report.outcome)["ran"]).toEqual({ to: "badrewrite@example.com" });
  expect(report.notes.join("\n")).toContain("watcher's rewrite was refused");
});

test("arguments that do not fit the act's parameters are refused before any hook is asked", async () => {
  const before = traces("mail.submit").length;
  const report = await session.callTool("send", JSON.stringify({ body: "no recipient" }));
  expect(report.outcome.ok).toBe(false);
  const msg = (report.outcome as { error: { code: string; msg: string } }).error.msg;
  expect(msg).toContain("do not fit its [[act]] parameters");
  expect(msg).toContain("(rule: act.parameters)");
  expect(traces("mail.submit").length).toBe(before);
});

test("a tool_result block withholds the act's output from the extension", async () => {
  const before = await runs();
  const report = await session.callTool("send", JSON.stringify({ to: "private@example.com", body: "x" }));
  expect(report.outcome).toEqual({
    ok: false,
    error: {
      code: "refused",
      msg: "after: The output of act 'mail.submit' was withheld by 'watcher': that output stays private",
    },
  });
  // It ran (the counter moved); its output never reached the tool's answer.
  expect(await runs()).toBe(before + 1);
  expect(traces("mail.submit").at(-1)).toMatchObject({ event: "tool_result", answer: "block" });
  expect(audits(report.invocationId).at(-1)).toEqual({
    capability: "act.after",
    target: "mail.submit",
    decision: "denied",
    rule: "hook:watcher",
  });
});

test("the halves: actBefore hands the arguments and an id, after tells the hooks", async () => {
  const report = await session.callTool("send_later", JSON.stringify({ to: "grace@example.com" }));
  const value = json(report.outcome);
  expect(value["ran"]).toEqual({ to: "grace@example.com" });
  expect(typeof value["callId"]).toBe("string");
  expect(
    traces("mail.submit")
      .slice(-2)
      .map((t) => [t.event, t.answer]),
  ).toEqual([
    ["tool_call", "context"],
    ["tool_result", "proceed"],
  ]);
});

test("a run that throws: the hooks are told the error, and the tool crashes with it", async () => {
  const report = await session.callTool("send_failing", "{}");
  expect(report.outcome).toMatchObject({ ok: false, error: { code: "crashed" } });
  expect((report.outcome as { error: { msg: string } }).error.msg).toContain("smtp is down");
  expect(report.notes).toEqual(['watcher saw mail.submit fail: {"name":"Error","message":"smtp is down"}']);
});

test("match globs select acts: payment.charge asks no mail.* hook, and the reporter's own hook is never asked", async () => {
  const report = await session.callTool("charge", "{}");
  expect(json(report.outcome)).toEqual({ charged: 100 });
  expect(traces("payment.charge")).toEqual([]);
  expect(audits(report.invocationId).map((a) => a.rule)).toEqual(["act", "act"]);
  broker.ledger.flush();
  expect(
    broker.store.sqlite
      .prepare("select count(*) as n from hook_traces where session_id = ? and extension = 'mailer'")
      .get(session.id),
  ).toEqual({ n: 0 });
});

test("an act the manifest does not declare is refused, naming the field to add, and audited", async () => {
  const report = await session.callTool("undeclared", "{}");
  expect(report.outcome.ok).toBe(false);
  const error = (report.outcome as { error: { code: string; msg: string } }).error;
  expect(error.code).toBe("denied");
  expect(error.msg).toContain(`does not declare the act 'mail.undeclared'; add [[act]] name = "mail.undeclared"`);
  expect(error.msg).toContain("(rule: act)");
  expect(audits(report.invocationId)).toEqual([
    { capability: "act.before", target: "mail.undeclared", decision: "denied", rule: "act" },
  ]);
  expect(traces("mail.undeclared")).toEqual([]);
});
