/**
 * The example extensions `make demo` relies on (manifests/guard, briefing,
 * flaky, flaky-digest), installed beside echo and weather in a temporary home
 * and driven through a real session over real jailed satellites:
 *
 * - guard (asked first) blocks a dangerous tool call with a reason the model
 *   can act on, and — once the operator `/flag`s a host — refuses capability
 *   calls that reach it, even ones the operator policy and the approval allow;
 * - briefing adds context at session start and before a turn, and a message;
 * - flaky fails to boot, flaky-digest (which requires it) is inactive with a
 *   reason naming flaky, and the rest stay active and keep working.
 */
import { urlWithoutValues } from "../../broker/egress/url-without-values.js";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { Session, type ExtensionStatus } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const EXTENSIONS = ["echo", "weather", "guard", "briefing", "flaky", "flaky-digest"];
/** The weather rule's own URL: the operator policy (allow_private) and the approval allow it. */
const PORTO = "http://127.0.0.1:17311/v1/forecast?city=Porto";

interface TraceRow {
  event: string;
  subject: string;
  about_invocation_id: number | null;
  extension: string;
  answer: string;
  detail: string;
}

let tmp: string;
let broker: Broker;
let session: Session;
let workspace: string;

function text(outcome: { ok: boolean; value?: unknown }): string {
  const content = (outcome.value as { content?: { type: string; text?: string }[] } | undefined)?.content ?? [];
  return content.map((c) => c.text ?? "").join("");
}

function errorOf(outcome: {
  ok: boolean;
  error?: { code: string; msg: string };
}): { code: string; msg: string } | null {
  return outcome.ok ? null : (outcome.error ?? null);
}

function traces(event: string): TraceRow[] {
  broker.ledger.flush();
  return broker.store.sqlite
    .prepare("select * from hook_traces where session_id = ? and event = ? order by id")
    .all(session.id, event) as TraceRow[];
}

function statusOf(name: string): ExtensionStatus {
  const row = session.status().find((s) => s.name === name);
  if (row === undefined) throw new Error(`no status row for ${name}`);
  return row;
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-demo-ext-"));
  const home = join(tmp, "home");
  mkdirSync(home, { recursive: true });
  // As in the demo: rules may name loopback, so the weather rule's own URL is allowed.
  writeFileSync(join(home, "policy.toml"), '[net]\nallow_private = true\ndeny = ["*.evil.example"]\n');
  broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
  for (const name of EXTENSIONS) {
    await broker.registry.install(join(REPO, "manifests", name));
    broker.registry.approve(name);
  }
  workspace = join(tmp, "acme-app");
  mkdirSync(workspace);
  session = await Session.open(broker, { id: "demo-ext", workspace });
});

afterAll(async () => {
  await session?.close();
  await broker?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe("activation: a failing extension takes its dependents down, not the rest", () => {
  test("guard, briefing, echo and weather are active, guard first in registry order", () => {
    const active = session
      .status()
      .filter((s) => s.state === "active" && !s.builtin)
      .map((s) => s.name);
    expect(active).toEqual(["guard", "briefing", "echo", "weather"]);
  });

  test("flaky is inactive with its boot failure (the module's own error)", () => {
    const flaky = statusOf("flaky");
    expect(flaky.state).toBe("inactive");
    expect(flaky.reason).toMatch(
      /^failed to start \(boot_failed\): Satellite 'flaky' exited .*missing configuration: FLAKY_CONFIG\.feedUrl is not set/s,
    );
  });

  test("flaky-digest, which requires flaky, is inactive with a reason naming flaky", () => {
    const digest = statusOf("flaky-digest");
    expect(digest.state).toBe("inactive");
    expect(digest.reason).toMatch(
      /^needs 'flaky' \(flaky-digest → flaky\), which is inactive: failed to start \(boot_failed\)/,
    );
  });

  test("their tools answer inactive, naming why; the rest keep working", async () => {
    const digest = errorOf((await session.callTool("feed_digest", "{}")).outcome);
    expect(digest?.code).toBe("inactive");
    expect(digest?.msg).toMatch(
      /^The tool 'feed_digest' belongs to 'flaky-digest', which is inactive in this session: needs 'flaky'/,
    );
    expect(text((await session.callTool("echo", '{"text":"still here"}')).outcome)).toBe("still here");
  });
});

describe("guard: tool_call", () => {
  test("a call whose arguments hold rm -rf is blocked before it runs, with a reason the model can act on", async () => {
    const report = await session.callTool("echo", '{"text":"cleaning up: rm -rf /"}');
    expect(report.blockedBy).toBe("guard");
    expect(report.outcome).toEqual({
      ok: false,
      error: {
        code: "blocked",
        msg: "Blocked by 'guard': guard: the arguments to 'echo' contain `rm -rf`, which this workspace does not allow; delete specific files by name, or ask the user to run it themselves.",
      },
    });
    broker.ledger.flush();
    const row = broker.store.sqlite
      .prepare("select outcome, extension, name from invocations where id = ?")
      .get(report.invocationId) as { outcome: string; extension: string; name: string };
    expect(row).toEqual({ outcome: "blocked", extension: "echo", name: "echo" });
    const trace = traces("tool_call").find((t) => t.about_invocation_id === report.invocationId);
    expect(trace).toMatchObject({ extension: "guard", answer: "block", subject: "echo" });
    expect(trace?.detail).toContain("contain `rm -rf`");
  });

  test("the flags may come in another order (rm -fr), or after a newline and extra spaces, and still be blocked", async () => {
    expect((await session.callTool("echo", '{"text":"rm -fr build"}')).blockedBy).toBe("guard");
    expect((await session.callTool("echo", '{"text":"step 1\\nrm  -rf  build"}')).blockedBy).toBe("guard");
  });

  test("a harmless call passes the guard and runs", async () => {
    const report = await session.callTool("echo", '{"text":"rm notes.txt"}');
    expect(report.blockedBy).toBeNull();
    expect(text(report.outcome)).toBe("rm notes.txt");
    expect(traces("tool_call").find((t) => t.about_invocation_id === report.invocationId)).toMatchObject({
      extension: "guard",
      answer: "proceed",
    });
  });
});

describe("guard: /flag and cap_call", () => {
  const hookRefusal =
    /Blocked by a hook: guard: 127\.0\.0\.1 is flagged by the operator \(\/flag 127\.0\.0\.1\); 'weather' may not reach it from tool:fetch_url\..*\(rule: hook:guard\)/;

  test("before any flag the guard lets the weather rule's own URL through (the fetch is not refused by a hook)", async () => {
    const outcome = (await session.callTool("fetch_url", JSON.stringify({ url: PORTO }))).outcome;
    // 200 when the demo's weather service happens to listen, else unreachable: either way no hook refused it.
    expect(JSON.stringify(outcome)).not.toContain("hook:guard");
    expect(
      traces("cap_call")
        .filter((t) => t.extension === "guard")
        .map((t) => t.answer),
    ).toEqual(["proceed"]);
  });

  test("/flag 127.0.0.1, then the same fetch is refused by the guard's cap_call hook, audited with rule hook:guard", async () => {
    const flagged = await session.runCommand("/flag 127.0.0.1");
    expect(flagged.extension).toBe("guard");
    expect(text(flagged.outcome)).toBe("flagged 127.0.0.1: capability calls that reach it are refused");

    const report = await session.callTool("fetch_url", JSON.stringify({ url: PORTO }));
    expect(errorOf(report.outcome)?.code).toBe("refused");
    expect(errorOf(report.outcome)?.msg).toMatch(/^denied: /);
    expect(errorOf(report.outcome)?.msg).toMatch(hookRefusal);

    broker.ledger.flush();
    const audit = broker.store.sqlite
      .prepare(
        "select decision, rule, target from cap_audit where session_id = ? and invocation_id = ? and capability = 'net.fetch'",
      )
      .all(session.id, report.invocationId);
    expect(audit).toEqual([{ decision: "denied", rule: "hook:guard", target: urlWithoutValues(PORTO) }]);
    const trace = traces("cap_call").filter((t) => t.about_invocation_id === report.invocationId);
    expect(trace).toHaveLength(1);
    expect(trace[0]).toMatchObject({
      extension: "guard",
      answer: "block",
      subject: `net.fetch ${urlWithoutValues(PORTO)}`,
    });
  });

  test("the flag covers the host however the URL spells it (127.0.0.1 written as one decimal number)", async () => {
    const outcome = (
      await session.callTool("fetch_url", JSON.stringify({ url: "http://2130706433:17311/v1/forecast?city=Porto" }))
    ).outcome;
    expect(errorOf(outcome)?.msg).toMatch(hookRefusal);
  });

  test("the flag covers every tool of every extension: forecast is refused too", async () => {
    const outcome = (await session.callTool("forecast", '{"city":"Porto"}')).outcome;
    expect(errorOf(outcome)?.msg).toContain("guard: 127.0.0.1 is flagged by the operator");
    expect(errorOf(outcome)?.msg).toContain("(rule: hook:guard)");
  });

  test("/flag with no host lists the flagged hosts; a non-host is refused", async () => {
    expect(text((await session.runCommand("/flag")).outcome)).toBe("flagged: 127.0.0.1");
    expect(errorOf((await session.runCommand("/flag two words")).outcome)).toEqual({
      code: "refused",
      msg: "not a host: 'two words' (expected /flag api.example.com)",
    });
  });

  test("/unflag 127.0.0.1, and the hook lets the fetch through again", async () => {
    expect(text((await session.runCommand("/unflag 127.0.0.1")).outcome)).toBe("unflagged 127.0.0.1");
    const outcome = (await session.callTool("fetch_url", JSON.stringify({ url: PORTO }))).outcome;
    expect(JSON.stringify(outcome)).not.toContain("hook:guard");
    expect(text((await session.runCommand("/flag")).outcome)).toBe("no hosts are flagged");
  });
});

describe("briefing: context", () => {
  test("session_start adds the workspace's conventions, naming the workspace folder", async () => {
    const composed = await session.fire("session_start", { source: "startup" });
    expect(composed.context).toEqual([
      "briefing: you are working in 'acme-app'. Conventions here: temperatures in °C, dates as YYYY-MM-DD, and ask before deleting anything.",
    ]);
    expect(traces("session_start").map((t) => [t.extension, t.answer])).toEqual([["briefing", "context"]]);
  });

  test("before_agent_start adds a hint for a weather prompt, nothing for another", async () => {
    const weather = await session.fire("before_agent_start", { prompt: "What's the weather in Lisbon tomorrow?" });
    expect(weather.context).toEqual(["briefing: the weather tools answer in °C; say which city a forecast is for."]);
    expect(weather.block).toBeNull();
    expect((await session.fire("before_agent_start", { prompt: "Tidy up the README" })).context).toEqual([]);
  });

  test("context adds one reminder message after the conversation, keeping what was there", async () => {
    const messages = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
    ];
    const composed = await session.fire("context", { messages });
    expect(composed.messages).toEqual([
      ...messages,
      {
        role: "system",
        content: "briefing: reminder — temperatures in °C, dates as YYYY-MM-DD, and ask before deleting anything.",
      },
    ]);
  });
});
