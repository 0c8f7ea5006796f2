/**
 * `[[hook]] match` over real jailed satellites: a hook whose matcher leaves the
 * subject out is never asked (its extension's invocation count in the ledger
 * stays 0, and no trace row is written), while a matching one is — for
 * tool_call, tool_result and cap_call. Review and status show the matchers.
 * Fixtures: tests/integration/fixtures/matchers (tools serves, picky and never hook).
 */
import { join } from "node:path";
import type { Broker } from "../../broker/broker.js";
import { renderStatus } from "../../broker/cli/session.js";
import { HOOK_SIGHT } from "../../broker/hooks/hook-sight.js";
import { buildReview, renderReview } from "../../broker/registry/review.js";
import type { Session } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { contentText, openHookSession, type HookSession } from "../support/hook-session.js";

const FIXTURES = join(REPO, "tests/integration/fixtures/matchers");

let tmp: string;
let broker: Broker;
let session: Session;

/** How many invocations (tool calls and hooks alike) the ledger holds for `extension` in this session. */
function invocations(extension: string): number {
  broker.ledger.flush();
  const row = broker.store.sqlite
    .prepare("select count(*) as n from invocations where session_id = ? and extension = ?")
    .get(session.id, extension) as { n: number };
  return row.n;
}

/** The trace rows of one event, as [extension, subject, answer]. */
function traces(event: string): [string, string, string][] {
  broker.ledger.flush();
  const rows = broker.store.sqlite
    .prepare("select extension, subject, answer from hook_traces where session_id = ? and event = ? order by id")
    .all(session.id, event) as { extension: string; subject: string; answer: string }[];
  return rows.map((r) => [r.extension, r.subject, r.answer]);
}

const text = contentText;
let opened: HookSession;

beforeAll(async () => {
  opened = await openHookSession("tether-matchers-", FIXTURES, ["tools", "picky", "never"], "matchers-1");
  ({ tmp, broker, session } = opened);
});

afterAll(async () => {
  await opened?.close();
});

test("all three are active, and no hook has been asked yet", () => {
  expect(
    session
      .status()
      .filter((s) => s.state === "active" && !s.builtin)
      .map((s) => s.name),
  ).toEqual(["never", "picky", "tools"]);
  expect([invocations("picky"), invocations("never")]).toEqual([0, 0]);
});

describe("tool_call and tool_result", () => {
  test("a tool no hook matches: neither hooking satellite is asked, nothing is traced", async () => {
    const report = await session.callTool("other", "{}");
    expect(text(report.outcome)).toBe("other");
    expect(report.trace).toEqual([]);
    expect(report.context).toEqual([]);
    expect([invocations("picky"), invocations("never")]).toEqual([0, 0]);
    expect(traces("tool_call")).toEqual([]);
    expect(traces("tool_result")).toEqual([]);
  });

  test("fs_read matches picky's tool_call (fs_*) only: one round trip to picky, one trace row", async () => {
    const report = await session.callTool("fs_read", "{}");
    expect(text(report.outcome)).toBe("read");
    expect(report.context).toEqual(["picky saw the call of fs_read"]);
    expect(invocations("picky")).toBe(1);
    expect(invocations("never")).toBe(0);
    expect(traces("tool_call")).toEqual([["picky", "fs_read", "context"]]);
    expect(traces("tool_result")).toEqual([]);
  });

  test("echo matches picky's tool_result only (never's ech?x and nope do not)", async () => {
    const report = await session.callTool("echo", '{"text":"hi"}');
    expect(text(report.outcome)).toBe("hi");
    expect(report.context).toEqual(["picky saw the result of echo"]);
    expect(invocations("picky")).toBe(2);
    expect(invocations("never")).toBe(0);
    expect(traces("tool_result")).toEqual([["picky", "echo", "context"]]);
  });
});

describe("cap_call", () => {
  test("a fetch to a host under *.wanted.example asks picky, which may block it", async () => {
    const blocked = JSON.parse(
      text((await session.callTool("fetch", '{"url":"https://blocked.wanted.example/x"}')).outcome),
    ) as { ok: boolean; message: string };
    expect(blocked).toMatchObject({ ok: false });
    expect(blocked.message).toContain("picky blocks blocked.wanted.example");
    const passed = JSON.parse(
      text((await session.callTool("fetch", '{"url":"https://api.wanted.example/x"}')).outcome),
    ) as { message?: string };
    expect(passed.message ?? "").not.toContain("hook:");
    expect(traces("cap_call")).toEqual([
      ["picky", "net.fetch https://blocked.wanted.example/x", "block"],
      ["picky", "net.fetch https://api.wanted.example/x", "notes"],
    ]);
    expect(invocations("never")).toBe(0);
  });

  test("a fetch to another host asks nobody (never's net.fetch elsewhere is anchored: it does not match elsewhere.example)", async () => {
    const before = invocations("picky");
    const reply = JSON.parse(
      text((await session.callTool("fetch", '{"url":"https://elsewhere.example/x"}')).outcome),
    ) as { message?: string };
    expect(reply.message ?? "").not.toContain("hook:");
    expect(invocations("picky")).toBe(before);
    expect(invocations("never")).toBe(0);
    expect(traces("cap_call").filter(([, subject]) => subject.includes("elsewhere"))).toEqual([]);
  });

  test("kv.put asks picky; kv.get asks nobody", async () => {
    const before = invocations("picky");
    expect(text((await session.callTool("store", "{}")).outcome)).toBe("1");
    // One invocation for the put's hook; the store call itself is tools'.
    expect(invocations("picky")).toBe(before + 1);
    expect(traces("cap_call").filter(([, subject]) => subject.startsWith("kv."))).toEqual([
      ["picky", "kv.put k", "notes"],
    ]);
  });

  test("never's satellite was never asked about anything", () => {
    expect(invocations("never")).toBe(0);
    broker.ledger.flush();
    expect(
      broker.store.sqlite.prepare("select count(*) as n from hook_traces where extension = 'never'").get(),
    ).toEqual({ n: 0 });
  });
});

describe("review and status show the matchers", () => {
  test("status: matchers by event, and the CLI line shows them", () => {
    const picky = session.status().find((s) => s.name === "picky")!;
    expect(picky.matchers).toEqual({
      tool_call: ["fs_*"],
      tool_result: ["echo"],
      cap_call: ["kv.put", "net.fetch *.wanted.example"],
    });
    expect(session.status().find((s) => s.name === "tools")!.matchers).toEqual({});
    expect(renderStatus([picky])).toBe(
      "active   picky  hooks: tool_call (only: fs_*), tool_result (only: echo), cap_call (only: kv.put, net.fetch *.wanted.example)",
    );
  });

  test("review: each hooked event with its matcher", () => {
    const installed = broker.registry.get("picky")!;
    const review = renderReview(
      buildReview(installed, broker.registry.status(installed), broker.registry.latestApproval("picky")),
      installed,
    );
    const hooks = review.slice(review.indexOf("It hooks"), review.indexOf("\nLimits:"));
    expect(hooks.split("\n").filter((line) => !line.startsWith("      "))).toEqual([
      "It hooks 3 events:",
      "  cap_call (only: kv.put, net.fetch *.wanted.example)",
      "  tool_call (only: fs_*)",
      "  tool_result (only: echo)",
      "",
    ]);
    // Under each, what approving it lets it see, narrowed by its match, and what it can do.
    expect(hooks).toContain(
      `  tool_call (only: fs_*)\n      sees: ${HOOK_SIGHT.tool_call.sees} — only those its match names\n      can:  ${HOOK_SIGHT.tool_call.can}\n`,
    );
    expect(hooks).toContain(`      sees: ${HOOK_SIGHT.cap_call.sees} — only those its match names`);
  });
});
