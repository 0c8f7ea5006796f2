/**
 * The author SDK's dispatch, `answer()`, driven with no channel and no socket.
 */
import fc from "fast-check";
import * as v from "valibot";
// The SDK's pure parts, file by file: `mod.ts` also re-exports the Deno serving loop.
import { answer, type Answer } from "../../jail-runtime/ext/answer.js";
import { json, outcome, refuse, text } from "../../jail-runtime/ext/content.js";
import { testCtx, type Ctx } from "../../jail-runtime/ext/ctx.js";
import { decodeArgs } from "../../jail-runtime/ext/decode_args.js";
import { hook, proceed, type Declared, type Hook } from "../../jail-runtime/ext/hook.js";
import type { Command, Tool } from "../../jail-runtime/ext/tool.js";
import { ErrorCode } from "../../jail-runtime/wire/codes.js";

function toolCall(name: string, args: unknown = {}) {
  return { kind: "tool", name, args: JSON.stringify(args) };
}

/** The error of a failed answer; fails the test on a success. */
function errorOf(reply: Answer): { code: string; msg: string } {
  if (reply.ok) throw new Error(`Expected a failed answer, got ${JSON.stringify(reply)}`);
  return reply.error;
}

function valueOf(reply: Answer): unknown {
  if (!reply.ok) throw new Error(`Expected a successful answer, got ${JSON.stringify(reply)}`);
  return reply.value;
}

const Weather = v.object({ city: v.string(), days: v.optional(v.number()) });

const tools: Record<string, Tool> = {
  weather: (args) => {
    const { city } = decodeArgs(Weather, args);
    if (city === "Atlantis") return refuse('City must be a real place name, e.g. "Lisbon"');
    return outcome([text(`Sunny in ${city}`), json({ city, temperature: 21 })]);
  },
  finish: async () => outcome([text("All files written")], { terminate: "terminate" }),
  nested: (args) => {
    const { a, items } = decodeArgs(v.object({ a: v.object({ b: v.string() }), items: v.array(v.number()) }), args);
    return outcome([json({ a, items })]);
  },
  boom: () => {
    throw new TypeError("boom, as asked");
  },
  echo: (args) => outcome([json(args)]),
};

describe("answer() for tools", () => {
  test("answer() renders a tool's outcome as text and json blocks with terminate false for continue", async () => {
    const reply = await answer({ tools }, toolCall("weather", { city: "Lisbon" }));
    expect(reply).toEqual({
      ok: true,
      value: {
        content: [
          { type: "text", text: "Sunny in Lisbon" },
          { type: "json", json: { city: "Lisbon", temperature: 21 } },
        ],
        terminate: false,
      },
    });
  });

  test('answer() renders terminate: "terminate" as terminate true', async () => {
    expect(valueOf(await answer({ tools }, toolCall("finish")))).toEqual({
      content: [{ type: "text", text: "All files written" }],
      terminate: true,
    });
  });

  test("answer() hands the tool the parsed JSON of the args text", async () => {
    const args = { a: [1, "two", null], b: { c: true } };
    expect(valueOf(await answer({ tools }, { kind: "tool", name: "echo", args: JSON.stringify(args) }))).toEqual({
      content: [{ type: "json", json: args }],
      terminate: false,
    });
  });

  test("answer() turns a refusal into refused with the extension's words", async () => {
    expect(await answer({ tools }, toolCall("weather", { city: "Atlantis" }))).toEqual({
      ok: false,
      error: { code: "refused", msg: 'City must be a real place name, e.g. "Lisbon"' },
    });
  });

  test("answer() names the tool asked for and the sorted list served for an unknown tool", async () => {
    const served = { tools: { zeta: tools.echo!, alpha: tools.echo!, Mid: tools.echo! } };
    expect(errorOf(await answer(served, toolCall("weathr")))).toEqual({
      code: "unknown_tool",
      msg: "Unknown tool 'weathr'; this extension serves [Mid, alpha, zeta]",
    });
  });

  test("answer() answers unknown_tool with an empty list when no tools are served", async () => {
    expect(errorOf(await answer({}, toolCall("x")))).toEqual({
      code: "unknown_tool",
      msg: "Unknown tool 'x'; this extension serves []",
    });
  });

  test.each(["toString", "__proto__", "constructor", "hasOwnProperty", "valueOf"])(
    "answer() calls the prototype key '%s' an unknown tool, not a crash",
    async (name) => {
      const error = errorOf(await answer({ tools: { echo: tools.echo! } }, toolCall(name)));
      expect(error).toEqual({ code: "unknown_tool", msg: `Unknown tool '${name}'; this extension serves [echo]` });
    },
  );

  test("answer() calls any name the table does not own unknown_tool", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string(), async (name) => {
        fc.pre(!Object.hasOwn(tools, name));
        const error = errorOf(await answer({ tools }, toolCall(name)));
        expect(error.code).toBe("unknown_tool");
        expect(error.msg).toBe(`Unknown tool '${name}'; this extension serves [boom, echo, finish, nested, weather]`);
      }),
    );
  });

  test.each(["", "{", "not json", "{'a':1}", "undefined"])(
    "answer() calls args %p bad_arguments naming the tool",
    async (args) => {
      let called = false;
      const served = { tools: { t: (() => ((called = true), outcome([]))) satisfies Tool } };
      expect(errorOf(await answer(served, { kind: "tool", name: "t", args }))).toEqual({
        code: "bad_arguments",
        msg: "Arguments for tool 't' are not JSON",
      });
      expect(called).toBe(false);
    },
  );

  test("answer() renders a decodeArgs failure as bad_arguments naming the tool, the field and what arrived", async () => {
    expect(errorOf(await answer({ tools }, toolCall("weather", { city: 5 })))).toEqual({
      code: "bad_arguments",
      msg: "tool 'weather': expected string at .city, got 5",
    });
  });

  test("answer() names every missing field", async () => {
    expect(errorOf(await answer({ tools }, toolCall("nested", {})))).toEqual({
      code: "bad_arguments",
      msg: 'tool \'nested\': missing "a" at .a; missing "items" at .items',
    });
  });

  test("answer() names nested fields and array indexes by their path", async () => {
    const error = errorOf(await answer({ tools }, toolCall("nested", { a: { b: null }, items: [1, "x", 3] })));
    expect(error).toEqual({
      code: "bad_arguments",
      msg: "tool 'nested': expected string at .a.b, got null; expected number at .items.1, got \"x\"",
    });
  });

  test("answer() lets a tool's throw propagate rather than swallowing it", async () => {
    await expect(answer({ tools }, toolCall("boom"))).rejects.toThrow(new TypeError("boom, as asked"));
  });

  test("answer() lets an async tool's rejection propagate", async () => {
    const served = { tools: { later: (async () => Promise.reject(new RangeError("late"))) satisfies Tool } };
    await expect(answer(served, toolCall("later"))).rejects.toBeInstanceOf(RangeError);
  });

  test("answer() hands the tool the context it was given and ctx.report reaches the testCtx callback", async () => {
    const seen: string[] = [];
    let given: Ctx | null = null;
    const ctx = testCtx({ strand: "s7", deadlineMs: 1234, report: (t) => seen.push(t) });
    const served = {
      tools: {
        chatty: ((_args, c) => {
          given = c;
          c.report("one");
          c.report("two");
          return outcome([text("done")]);
        }) satisfies Tool,
      },
    };
    expect((await answer(served, toolCall("chatty"), ctx)).ok).toBe(true);
    expect(seen).toEqual(["one", "two"]);
    expect(given).toBe(ctx);
  });

  test("testCtx() defaults to no strand, a 30 s deadline, a silent report and a live signal", () => {
    const ctx = testCtx();
    expect(ctx.strand).toBe("");
    expect(ctx.deadlineMs).toBe(30_000);
    expect(ctx.signal.aborted).toBe(false);
    expect(() => ctx.report("ignored")).not.toThrow();
  });
});

describe("answer() for events", () => {
  const allow: Hook<"tool_call"> = hook("tool_call", () => proceed);
  const call = { tool: "sh", call_id: "c1", arguments: { command: "ls" } };
  const start = { session_id: "s1", workspace: "/w", source: "cli" };
  const usage = { seq: 1, origin: "provider_reported", model: "m", input_tokens: 10, output_tokens: 2 };

  test("answer() answers unhandled for an event with no hook", async () => {
    expect(
      await answer({ hooks: [["tool_call", allow]] }, { kind: "event", name: "usage", args: JSON.stringify(usage) }),
    ).toEqual({
      ok: false,
      error: { code: "unhandled", msg: "No hook for 'usage'" },
    });
    expect(errorOf(await answer({}, { kind: "event", name: "usage", args: "{}" })).code).toBe("unhandled");
  });

  test("answer() answers mismatched_hook when the declared event and the hook's event differ", async () => {
    const declared: Declared = ["tool_result", allow];
    expect(await answer({ hooks: [declared] }, { kind: "event", name: "tool_result", args: "{}" })).toEqual({
      ok: false,
      error: {
        code: "mismatched_hook",
        msg: "The manifest declares 'tool_result' but the module's hook answers 'tool_call'",
      },
    });
  });

  test("answer() renders a hook's verdict as JSON text, and proceed as {}", async () => {
    const block = hook("tool_call", (payload) => ({ block: `saw ${JSON.stringify(payload)}`, notes: ["guarded"] }));
    const reply = await answer(
      { hooks: [["tool_call", block]] },
      { kind: "event", name: "tool_call", args: JSON.stringify(call) },
    );
    expect(reply).toEqual({
      ok: true,
      value: JSON.stringify({ block: `saw ${JSON.stringify(call)}`, notes: ["guarded"] }),
    });
    expect(
      await answer({ hooks: [["tool_call", allow]] }, { kind: "event", name: "tool_call", args: JSON.stringify(call) }),
    ).toEqual({ ok: true, value: "{}" });
  });

  test("answer() awaits an async hook", async () => {
    const slow = hook("usage", async () => ({ noted: 1 }));
    expect(
      valueOf(
        await answer({ hooks: [["usage", slow]] }, { kind: "event", name: "usage", args: JSON.stringify(usage) }),
      ),
    ).toBe('{"noted":1}');
  });

  test("answer() calls an event payload that is not JSON bad_arguments naming the event", async () => {
    let ran = false;
    const h = hook("context", () => ((ran = true), proceed));
    expect(
      errorOf(await answer({ hooks: [["context", h]] }, { kind: "event", name: "context", args: "{oops" })),
    ).toEqual({
      code: "bad_arguments",
      msg: "Arguments for event 'context' are not JSON",
    });
    expect(ran).toBe(false);
  });

  test("answer() renders a hook's own decodeArgs failure (of a tool call's arguments) as bad_arguments naming the event and field", async () => {
    const h = hook("tool_call", (payload) => {
      decodeArgs(v.object({ command: v.string() }), payload.arguments);
      return proceed;
    });
    const args = JSON.stringify({ ...call, arguments: { command: 1 } });
    expect(errorOf(await answer({ hooks: [["tool_call", h]] }, { kind: "event", name: "tool_call", args }))).toEqual({
      code: "bad_arguments",
      msg: "event 'tool_call': expected string at .command, got 1",
    });
  });

  test("answer() lets a hook's throw propagate", async () => {
    const h = hook("agent_end", () => {
      throw new Error("hook failed");
    });
    const args = JSON.stringify({ reply: "done", held: 0 });
    await expect(answer({ hooks: [["agent_end", h]] }, { kind: "event", name: "agent_end", args })).rejects.toThrow(
      "hook failed",
    );
  });

  test("answer() hands the hook's ctx.report to the caller's callback", async () => {
    const seen: string[] = [];
    const h = hook("session_start", (p, ctx) => (ctx.report(`hello ${p.session_id}`), proceed));
    await answer(
      { hooks: [["session_start", h]] },
      { kind: "event", name: "session_start", args: JSON.stringify(start) },
      testCtx({ report: (t) => seen.push(t) }),
    );
    expect(seen).toEqual(["hello s1"]);
  });
});

describe("answer() for commands and other kinds", () => {
  test("answer() hands a command the raw argument text, unparsed", async () => {
    let got: unknown = null;
    const commands: Record<string, Command> = {
      deploy: (args) => {
        got = args;
        return outcome([text(`deploying ${args}`)]);
      },
    };
    const reply = await answer({ commands }, { kind: "command", name: "deploy", args: "prod --force {not json" });
    expect(got).toBe("prod --force {not json");
    expect(valueOf(reply)).toEqual({
      content: [{ type: "text", text: "deploying prod --force {not json" }],
      terminate: false,
    });
  });

  test("answer() names the command asked for and the sorted commands served", async () => {
    const commands: Record<string, Command> = { stop: () => outcome([]), start: () => outcome([]) };
    expect(errorOf(await answer({ commands }, { kind: "command", name: "toString", args: "" }))).toEqual({
      code: "unknown_tool",
      msg: "Unknown command 'toString'; this extension serves [start, stop]",
    });
  });

  test("answer() turns a command's refusal into refused", async () => {
    const commands: Record<string, Command> = { stop: () => refuse("Nothing is running") };
    expect(errorOf(await answer({ commands }, { kind: "command", name: "stop", args: "" }))).toEqual({
      code: "refused",
      msg: "Nothing is running",
    });
  });

  test.each(["routes", "", "TOOL", "tools"])("answer() answers bad_kind for kind %p", async (kind) => {
    expect(await answer({ tools }, { kind, name: "echo", args: "{}" })).toEqual({
      ok: false,
      error: { code: "bad_kind", msg: `This extension does not serve kind '${kind}'` },
    });
  });

  test("answer() only ever fails with the SDK's codes", async () => {
    const sdkCodes = new Set<string>([
      ErrorCode.refused,
      ErrorCode.unknownTool,
      ErrorCode.unhandled,
      ErrorCode.mismatchedHook,
      ErrorCode.badArguments,
      ErrorCode.badKind,
    ]);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("tool", "event", "command", "route", "x"),
        fc.constantFrom("weather", "nested", "echo", "finish", "tool_call", "usage", "deploy", "__proto__"),
        fc.oneof(fc.json(), fc.string()),
        async (kind, name, args) => {
          const served = {
            tools: { weather: tools.weather!, nested: tools.nested!, echo: tools.echo!, finish: tools.finish! },
            hooks: [
              ["tool_call", hook("tool_call", () => proceed)],
              ["usage", hook("agent_end", () => proceed)],
            ] as const,
            commands: { deploy: ((a: string) => outcome([text(a)])) satisfies Command },
          };
          const reply = await answer(served, { kind, name, args });
          if (!reply.ok) expect(sdkCodes.has(reply.error.code)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
