/**
 * The hook bus over real jailed satellites: every event reaches a real
 * extension (tests/integration/fixtures/bus/hooker answers each as its payload
 * asks), verdicts compose in registry order, `tool_call` / `tool_result` wrap
 * real tool calls, `cap_call` guards a real capability call, and every verdict
 * is traced in the ledger.
 */
import { join } from "node:path";
import type { Broker } from "../../broker/broker.js";
import type { Session } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { contentText, openHookSession, type HookSession } from "../support/hook-session.js";

const FIXTURES = join(REPO, "tests/integration/fixtures/bus");

interface TraceRow {
  session_id: string;
  event: string;
  subject: string;
  about_invocation_id: number | null;
  hook_invocation_id: number | null;
  extension: string;
  answer: string;
  detail: string;
  duration_ms: number;
}

let tmp: string;
let broker: Broker;
let session: Session;

function traces(event: string): TraceRow[] {
  broker.ledger.flush();
  return broker.store.sqlite
    .prepare("select * from hook_traces where session_id = ? and event = ? order by id")
    .all(session.id, event) as TraceRow[];
}

const text = contentText;
let opened: HookSession;

beforeAll(async () => {
  opened = await openHookSession("tether-bus-", FIXTURES, ["hooker", "worker", "ctxadd"], "bus-1");
  ({ tmp, broker, session } = opened);
});

afterAll(async () => {
  await opened?.close();
});

describe("registry order and the harness's events", () => {
  test("the active extensions are in registry order: priority 0, 10, 20", () => {
    expect(
      session
        .status()
        .filter((s) => s.state === "active" && !s.builtin)
        .map((s) => s.name),
    ).toEqual(["worker", "hooker", "ctxadd"]);
  });

  test("session_start: both extensions' context adds up, in registry order", async () => {
    const composed = await session.fire("session_start", { source: "startup" });
    expect(composed.context).toEqual([
      "hooker saw session bus-1 start (startup)",
      "ctxadd: the user prefers metric units",
    ]);
    expect(traces("session_start").map((t) => [t.extension, t.answer])).toEqual([
      ["hooker", "context"],
      ["ctxadd", "context"],
    ]);
  });

  test("before_agent_start: the first block wins, context from both still adds up", async () => {
    const composed = await session.fire("before_agent_start", { prompt: "please do the forbidden thing" });
    expect(composed.block).toEqual({ reason: "hooker: that prompt is forbidden", by: "hooker" });
    expect(composed.context).toEqual(["ctxadd: answer briefly"]);
  });

  test("before_agent_start: the later extension's block applies when the earlier one lets it through", async () => {
    const composed = await session.fire("before_agent_start", { prompt: "hello" });
    expect(composed.block).toEqual({ reason: "ctxadd blocks too, but later", by: "ctxadd" });
    expect(composed.context).toEqual(["hooker read: hello", "ctxadd: answer briefly"]);
    expect(composed.notes).toEqual(["hooker looked at the prompt"]);
  });

  test("before_agent_start: halt is reported", async () => {
    const composed = await session.fire("before_agent_start", { prompt: "stop now" });
    expect(composed.halt).toEqual({ reason: "hooker: stop requested", by: "hooker" });
  });

  test("context: message transforms chain — ctxadd sees the message hooker added", async () => {
    const composed = await session.fire("context", { messages: [{ role: "user", content: "hi" }] });
    expect(composed.messages).toEqual([
      { role: "user", content: "hi" },
      { role: "system", content: "hooker was here" },
      { role: "system", content: "ctxadd saw 2 messages" },
    ]);
    expect(traces("context").map((t) => [t.extension, t.answer, t.detail])).toEqual([
      ["hooker", "messages", "2 messages"],
      ["ctxadd", "messages", "3 messages"],
    ]);
  });

  test("agent_end: a block keeps the turn going until the hook lets it end", async () => {
    expect((await session.fire("agent_end", { reply: "done", held: 0 })).block?.reason).toBe("keep going (held 0)");
    expect((await session.fire("agent_end", { reply: "done", held: 1 })).block?.reason).toBe("keep going (held 1)");
    expect((await session.fire("agent_end", { reply: "done", held: 2 })).block).toBeNull();
  });

  test("agent_end: after 8 holds the bus lets the turn end, whatever the hook says", async () => {
    expect((await session.fire("agent_end", { reply: "forever", held: 7 })).block?.reason).toBe("keep going forever");
    const composed = await session.fire("agent_end", { reply: "forever", held: 8 });
    expect(composed.block).toBeNull();
    expect(composed.notes).toEqual([
      "hooker asked to keep the turn going again; it was already held 8 times, so the turn ends",
    ]);
  });

  test("agent_settled: notes come back", async () => {
    expect((await session.fire("agent_settled", {})).notes).toEqual(["hooker: settled"]);
  });

  test("before_compact: text is added, and it can never veto", async () => {
    const composed = await session.fire("before_compact", { reason: "threshold" });
    expect(composed.compactText).toBe("hooker: keep the user's name (threshold)");
    expect(composed.block).toBeNull();
  });

  test("usage: the hook runs (it records the row) but its answer is ignored", async () => {
    const composed = await session.fire("usage", {
      seq: 7,
      origin: "provider_reported",
      model: "m",
      input_tokens: 10,
      output_tokens: 2,
    });
    expect(composed.block).toBeNull();
    expect(traces("usage").map((t) => t.answer)).toEqual(["ignored"]);
    const seen = await session.callTool("seen", "{}");
    expect(text(seen.outcome)).toBe('["usage:7"]');
  });

  test("a payload that does not fit its event is refused before any hook is asked", async () => {
    await expect(session.fire("before_compact", { reason: 5 } as never)).rejects.toThrow(
      "event 'before_compact': Invalid type: Expected string but received 5 at .reason",
    );
  });
});

describe("tool_call and tool_result around a real tool call", () => {
  test("proceed: the tool runs with the caller's arguments and tool_result adds context", async () => {
    const report = await session.callTool("run", '{"text":"hi"}');
    expect(text(report.outcome)).toBe("ran: hi");
    expect(report.context).toEqual(["hooker saw run end ok=true"]);
    expect(report.rewrittenBy).toBeNull();
  });

  test("block: the tool never runs; the caller reads the hook's reason; the ledger shows the call blocked", async () => {
    const report = await session.callTool("run", '{"text":"rm -rf /","hook":"block"}');
    expect(report.outcome).toEqual({
      ok: false,
      error: { code: "blocked", msg: "Blocked by 'hooker': hooker: rm -rf is not allowed" },
    });
    broker.ledger.flush();
    const row = broker.store.sqlite
      .prepare("select outcome, name from invocations where id = ?")
      .get(report.invocationId) as { outcome: string; name: string };
    expect(row).toEqual({ outcome: "blocked", name: "run" });
    const trace = traces("tool_call").find((t) => t.about_invocation_id === report.invocationId);
    expect(trace).toMatchObject({
      extension: "hooker",
      answer: "block",
      detail: "hooker: rm -rf is not allowed",
      subject: "run",
    });
    expect(trace?.hook_invocation_id).toEqual(expect.any(Number));
  });

  test("halt: the tool does not run and the turn is asked to end", async () => {
    const report = await session.callTool("run", '{"text":"x","hook":"halt"}');
    expect(report.halt).toEqual({ reason: "hooker: enough for this turn", by: "hooker" });
    expect(report.outcome.ok).toBe(false);
  });

  test("rewrite: the tool runs with the rewritten arguments, which the report shows", async () => {
    const report = await session.callTool("run", '{"text":"hi","hook":"rewrite"}');
    expect(text(report.outcome)).toBe("ran: hi (rewritten)");
    expect(report.arguments).toBe('{"text":"hi (rewritten)"}');
    expect(report.rewrittenBy).toBe("hooker");
  });

  test("a rewrite that does not validate against the tool's schema is refused and noted, and the original runs", async () => {
    const report = await session.callTool("run", '{"text":"hi","hook":"bad-rewrite"}');
    expect(text(report.outcome)).toBe("ran: hi [bad-rewrite]");
    expect(report.notes).toEqual(["hooker's rewrite was refused: expected string at .text"]);
    expect(report.rewrittenBy).toBeNull();
    expect(report.trace[0]).toMatchObject({ extension: "hooker", answer: "refused-rewrite" });
  });

  test("arguments the tool's schema refuses are refused before any hook is asked; the ledger shows the call", async () => {
    const asked = traces("tool_call").length;
    // Each way an argument can be unfit for `run`: wrong type, missing, not allowed, not an object.
    for (const args of ['{"text":5}', "{}", '{"text":"x","extra":1}', "[]", '"text"']) {
      const report = await session.callTool("run", args);
      expect(report.outcome).toMatchObject({ ok: false, error: { code: "bad_arguments" } });
      expect((report.outcome as { error: { msg: string } }).error.msg).toMatch(/^tool 'run': /);
      expect(report.notes).toEqual([]);
      expect(report.trace).toEqual([]);
      broker.ledger.flush();
      const row = broker.store.sqlite
        .prepare("select outcome, name from invocations where id = ?")
        .get(report.invocationId) as { outcome: string; name: string };
      expect(row).toEqual({ outcome: "bad_arguments", name: "run" });
    }
    expect(traces("tool_call")).toHaveLength(asked);
  });

  test("unhandled: nothing happened — the tool runs and the trace says unhandled", async () => {
    const report = await session.callTool("run", '{"text":"hi","hook":"unhandled"}');
    expect(text(report.outcome)).toBe("ran: hi [unhandled]");
    expect(report.trace[0]).toMatchObject({ extension: "hooker", answer: "unhandled" });
    expect(report.notes).toEqual([]);
  });

  test("substitute: the hook's result is answered and the tool does not run", async () => {
    const report = await session.callTool("run", '{"text":"hi","hook":"substitute"}');
    expect(report.outcome).toEqual({
      ok: true,
      value: { content: [{ type: "text", text: "hooker answered instead" }], terminate: false },
    });
    expect(report.substitutedBy).toBe("hooker");
    const json = await session.callTool("run", '{"text":"hi","hook":"substitute-json"}');
    expect(json.outcome).toEqual({
      ok: true,
      value: { content: [{ type: "json", json: { answer: 42 } }], terminate: false },
    });
  });

  test("a hook that crashes blocks the call when its row says on_error = block", async () => {
    const report = await session.callTool("run", '{"text":"x","hook":"crash"}');
    expect(report.outcome.ok).toBe(false);
    expect(!report.outcome.ok && report.outcome.error.msg).toMatch(
      /^Blocked by 'hooker': hooker's hook failed: crashed: .*hooker crashed on purpose/,
    );
  });

  test("a hook that passes its time limit (1.5 s) blocks too, and the next call is served by a fresh satellite", async () => {
    const report = await session.callTool("run", '{"text":"x","hook":"slow"}');
    expect(!report.outcome.ok && report.outcome.error.msg).toMatch(/hooker's hook failed: timeout/);
    expect(text((await session.callTool("run", '{"text":"after"}')).outcome)).toBe("ran: after");
  });

  test("tool_result: a block withholds the result from the caller", async () => {
    const report = await session.callTool("secret", "{}");
    expect(report.outcome).toEqual({
      ok: false,
      error: { code: "blocked", msg: "The result was withheld by 'hooker': hooker: the result holds a secret" },
    });
    expect(report.blockedBy).toBe("hooker");
  });

  test("a tool no active extension serves is unknown_tool, naming what the session serves", async () => {
    const report = await session.callTool("nope", "{}");
    expect(report.outcome).toEqual({
      ok: false,
      error: {
        code: "unknown_tool",
        msg: "Unknown tool 'nope'; this session serves [fetch, run, secret, seen, ticks]",
      },
    });
  });
});

describe("cap_call and commands", () => {
  test("a command flags a host; the cap_call hook then refuses a fetch to it with its reason; others pass the hook", async () => {
    const flagged = await session.runCommand("/flag flagged.example");
    expect(flagged.extension).toBe("hooker");
    expect(text(flagged.outcome)).toBe("flagged flagged.example");

    const blocked = JSON.parse(
      text((await session.callTool("fetch", '{"url":"https://flagged.example/data"}')).outcome),
    ) as { ok: boolean; code: string; message: string };
    expect(blocked).toMatchObject({ ok: false, code: "denied" });
    expect(blocked.message).toContain(
      "hooker: flagged.example is flagged by the operator (tool:fetch; saw https://flagged.example/data)",
    );
    expect(blocked.message).toContain("rule: hook:hooker");

    const trace = traces("cap_call").filter((t) => t.answer === "block");
    expect(trace).toHaveLength(1);
    expect(trace[0]).toMatchObject({ extension: "hooker", subject: "net.fetch https://flagged.example/data" });

    const other = JSON.parse(
      text((await session.callTool("fetch", '{"url":"https://fine.example/data"}')).outcome),
    ) as { ok: boolean; message?: string };
    expect(other.message ?? "").not.toContain("hook:");
  });

  test("other extensions' hooks see a fetch's target without query values or fragment; so does the ledger's trace", async () => {
    // (Credentials in a URL never reach the hooks: the policy refuses them first.)
    const url = "https://flagged.example/data?key=SECRET&city=Porto#frag";
    const blocked = JSON.parse(text((await session.callTool("fetch", JSON.stringify({ url }))).outcome)) as {
      message: string;
    };
    expect(blocked.message).toContain("saw https://flagged.example/data?key=…&city=…)");
    expect(blocked.message).not.toContain("SECRET");
    expect(blocked.message).not.toContain("frag");
    expect(traces("cap_call").some((t) => t.subject === "net.fetch https://flagged.example/data?key=…&city=…")).toBe(
      true,
    );
    expect(traces("cap_call").some((t) => t.subject.includes("SECRET"))).toBe(false);
  });

  test("the hooks' own capability calls are not asked about (no cap_call for hooker's kv reads)", () => {
    expect(traces("cap_call").every((t) => t.subject.startsWith("net.fetch"))).toBe(true);
  });

  test("commands take the raw text; an unknown command names the session's commands", async () => {
    expect(text((await session.runCommand("/echo  two words ")).outcome)).toBe("echo: two words");
    expect((await session.runCommand("/nope")).outcome).toEqual({
      ok: false,
      error: { code: "unknown_tool", msg: "Unknown command 'nope'; this session serves [/echo, /flag]" },
    });
  });
});
