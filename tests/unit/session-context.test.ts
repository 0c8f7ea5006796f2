/**
 * The pure parts of context loading and preparation: the composed context's
 * bound, checking a session-facing answer, and a preparation's narrowing of
 * the plan.
 */
import { planActivation, type Candidate } from "../../broker/sessions/activation.js";
import { decodeSessionAnswer } from "../../broker/sessions/ask-session-kind.js";
import { narrowPlan, type Setup } from "../../broker/sessions/bundle-setup.js";
import { composeContext, MAX_SESSION_CONTEXT_BYTES } from "../../broker/sessions/composed-context.js";
import type { ContextPiece } from "../../broker/sessions/context-loaders.js";
import { closeManaged } from "../../broker/sessions/preparation.js";
import { TetherError } from "../../broker/base/errors.js";
import type { SessionScope } from "../../broker/kernel/session-scope.js";

const piece = (extension: string, source: string, text: string): ContextPiece => ({ extension, source, text });

describe("composeContext", () => {
  test("keeps registry order and attribution", () => {
    const pieces: Record<string, ContextPiece[]> = {
      b: [piece("b", "context:one", "b1")],
      a: [piece("a", "prepare", "a1"), piece("a", "prepare", "a2")],
    };
    const composed = composeContext(["b", "a"], (name) => pieces[name] ?? []);
    expect(composed.pieces.map((p) => `${p.extension} ${p.source} ${p.text}`)).toEqual([
      "b context:one b1",
      "a prepare a1",
      "a prepare a2",
    ]);
    expect(composed.omitted.size).toBe(0);
  });

  test("past the bound a piece is left out whole, with a warning for its extension; a later one that fits still joins", () => {
    const big = "x".repeat(60);
    const pieces: Record<string, ContextPiece[]> = {
      first: [piece("first", "context:a", big)],
      second: [piece("second", "context:b", big), piece("second", "context:c", "small")],
    };
    const composed = composeContext(["first", "second"], (name) => pieces[name] ?? [], 100);
    expect(composed.pieces.map((p) => p.source)).toEqual(["context:a", "context:c"]);
    expect(composed.omitted.get("second")).toEqual([
      "context:b (60 bytes) left out of the session's context: with what comes earlier in registry order it would pass the bound of 100 bytes",
    ]);
  });

  test("the bound counts UTF-8 bytes, and is 256 KiB by default", () => {
    expect(MAX_SESSION_CONTEXT_BYTES).toBe(262_144);
    const composed = composeContext(["e"], () => [piece("e", "context:a", "é".repeat(3))], 5);
    expect(composed.pieces).toEqual([]);
  });
});

describe("decodeSessionAnswer", () => {
  test("a fitting answer is checked into its kind's shape", () => {
    expect(decodeSessionAnswer("context", '{"text":"hi"}')).toEqual({ ok: true, answer: { text: "hi" } });
    expect(decodeSessionAnswer("prepare", '{"tools":["a"],"observe":false}')).toEqual({
      ok: true,
      answer: { tools: ["a"], observe: false },
    });
  });

  test("not JSON, too deep, or a field the kind does not take: crashed, naming what was wrong", () => {
    expect(decodeSessionAnswer("context", "hi")).toEqual({ ok: false, problem: "crashed: it answered not JSON" });
    expect(decodeSessionAnswer("context", "[".repeat(200) + "]".repeat(200))).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/^crashed: it answered nested deeper than/),
    });
    const extra = decodeSessionAnswer("prepare", '{"tools":["a"],"grants":["net"]}');
    expect(extra).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/^crashed: it answered what a prepare answer may not hold: .*grants/),
    });
    expect(decodeSessionAnswer("context", JSON.stringify({ text: "x".repeat(64 * 1024 + 1) }))).toMatchObject({
      ok: false,
    });
  });
});

describe("narrowPlan", () => {
  const ext = (name: string, tools: string[], commands: string[] = []): Candidate => ({
    name,
    requires: [],
    priority: 0,
    tools,
    commands,
    routes: [],
    compactions: [],
    enabled: true,
    notApproved: null,
  });
  const setup = (tools: string[] | null, commands: string[] | null = null): Setup => ({
    pieces: [],
    warnings: [],
    tools,
    commands,
    observes: false,
    managed: true,
  });

  test("takes out what a preparation left off; an extension that did not narrow keeps all it declares", () => {
    const plan = planActivation([ext("managed", ["plan", "draft"], ["replan"]), ext("plain", ["hello"])]);
    const narrowed = narrowPlan(plan, new Map([["managed", setup(["plan"], [])]]));
    expect([...narrowed.tools]).toEqual([
      ["plan", "managed"],
      ["hello", "plain"],
    ]);
    expect([...narrowed.commands]).toEqual([]);
    expect(narrowed.active).toEqual(plan.active);
  });
});

describe("closeManaged", () => {
  /** A scope whose every invocation answers `answer` (or throws it). */
  const scopeAnswering = (answer: () => Promise<unknown>): SessionScope =>
    ({ id: "s-1", invoke: answer }) as unknown as SessionScope;

  test("an answered close is no note; the payload names the session (the scope's id) and the reason", async () => {
    const asked: unknown[] = [];
    const scope = {
      id: "s-1",
      invoke: async (...args: unknown[]) => (asked.push(args), { outcome: { ok: true, value: "{}" }, invocationId: 7 }),
    } as unknown as SessionScope;
    expect(await closeManaged(scope, "planner", "reloaded_out")).toBeNull();
    expect(asked).toEqual([["planner", "close", "close", '{"session_id":"s-1","reason":"reloaded_out"}']]);
  });

  test("a failed, malformed or refused close is a note naming the extension and the reason, never a throw", async () => {
    const failed = scopeAnswering(async () => ({
      outcome: { ok: false, error: { code: "timeout", msg: "close 'close' passed its time limit of 50 ms" } },
      invocationId: 1,
    }));
    expect(await closeManaged(failed, "planner", "session_closed")).toBe(
      "close of 'planner' (session_closed) failed: timeout: close 'close' passed its time limit of 50 ms",
    );
    const malformed = scopeAnswering(async () => ({ outcome: { ok: true, value: '{"extra":1}' }, invocationId: 2 }));
    expect(await closeManaged(malformed, "planner", "prepare_failed")).toMatch(
      /^close of 'planner' \(prepare_failed\) failed: crashed: it answered what a close answer may not hold/,
    );
    const refused = scopeAnswering(async () => {
      throw new TetherError("closed", "The broker is closed");
    });
    expect(await closeManaged(refused, "planner", "session_closed")).toBe(
      "close of 'planner' (session_closed) failed: closed: The broker is closed",
    );
  });
});

describe("tether session status's context lines", () => {
  test("each piece under its extension and source, long texts cut to three lines; nothing when there is none", async () => {
    const { renderContext } = await import("../../broker/cli/session.js");
    expect(renderContext([])).toBe("");
    expect(
      renderContext([
        { extension: "pad", source: "prepare", text: "one line" },
        { extension: "docs", source: "context:rules", text: "a\nb\nc\nd\ne" },
      ]),
    ).toBe(
      [
        "",
        "context (registry order):",
        "  pad prepare:",
        "    one line",
        "  docs context:rules:",
        "    a",
        "    b",
        "    c",
        "    … (2 more lines)",
      ].join("\n"),
    );
  });
});
