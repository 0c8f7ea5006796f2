/**
 * The author SDK's typed hooks: `hook(event, run)` hands `run` the event's
 * payload checked against the wire's schema, and `answer()` sends back the
 * verdict as JSON text, `unhandled`, or an error naming the field.
 *
 * The `@ts-expect-error` lines are checked by `tsc` (`make typecheck`, which
 * `make test` runs first): each fails the typecheck if the error it expects
 * goes away.
 */
import { answer, type Answer } from "../../jail-runtime/ext/answer.js";
import { testCtx } from "../../jail-runtime/ext/ctx.js";
import { BadArguments } from "../../jail-runtime/ext/decode_args.js";
import {
  hook,
  proceed,
  unhandled,
  HOOK_EVENTS,
  type AnyHook,
  type Declared,
  type EventPayload,
  type Hook,
  type HookEvent,
} from "../../jail-runtime/ext/hook.js";

function event(name: string, payload: unknown) {
  return { kind: "event", name, args: JSON.stringify(payload) };
}

function errorOf(reply: Answer): { code: string; msg: string } {
  if (reply.ok) throw new Error(`Expected a failed answer, got ${JSON.stringify(reply)}`);
  return reply.error;
}

function valueOf(reply: Answer): unknown {
  if (!reply.ok) throw new Error(`Expected a successful answer, got ${JSON.stringify(reply)}`);
  return reply.value;
}

const call: EventPayload<"tool_call"> = { tool: "sh", call_id: "c1", arguments: { command: "rm -rf /" } };
const start: EventPayload<"session_start"> = { session_id: "s1", workspace: "/w", source: "cli" };

/** One valid payload per event, so every hook can be dispatched. */
const PAYLOADS: { readonly [E in HookEvent]: EventPayload<E> } = {
  session_start: start,
  before_agent_start: { prompt: "hi" },
  context: { messages: [{ role: "user", content: "hi" }] },
  tool_call: call,
  tool_result: { ...call, ok: true, result: "done", started_ms: 1, finished_ms: 2 },
  agent_end: { reply: "done", held: 0 },
  agent_settled: {},
  before_compact: { reason: "threshold" },
  usage: { seq: 1, origin: "provider_reported", model: "m", input_tokens: 10, output_tokens: 2 },
  cap_call: { extension: "x", capability: "net.fetch", target: "https://a.example", within: "tool:t" },
  route_call: { extension: "x", route: "ping", request: "hi", truncated: false },
};

describe("hook(): the handler gets the event's payload, typed and checked", () => {
  test("the payload reaches the handler as the event's typed object, with the ctx", async () => {
    let seen: EventPayload<"tool_call"> | null = null;
    let strand = "";
    const guard = hook("tool_call", (payload, ctx) => {
      seen = payload;
      strand = ctx.strand;
      // Typed: `tool` is a string, with no cast.
      return payload.tool.toUpperCase() === "SH" ? { block: "no shell" } : proceed;
    });
    expect(
      await answer({ hooks: [["tool_call", guard]] }, event("tool_call", call), testCtx({ strand: "s9" })),
    ).toEqual({
      ok: true,
      value: '{"block":"no shell"}',
    });
    expect(seen).toEqual(call);
    expect(strand).toBe("s9");
  });

  test("a payload that does not match the event's schema is bad_arguments naming each field, and the handler never runs", async () => {
    let ran = false;
    const guard = hook("tool_call", () => ((ran = true), proceed));
    expect(
      errorOf(await answer({ hooks: [["tool_call", guard]] }, event("tool_call", { tool: 5, call_id: "c1" }))),
    ).toEqual({
      code: "bad_arguments",
      msg: "event 'tool_call': expected string at .tool, got 5; missing \"arguments\" at .arguments",
    });
    expect(ran).toBe(false);
  });

  test("a field's checks count, not only its type: a negative count is bad_arguments naming it", async () => {
    const h = hook("agent_end", () => proceed);
    const error = errorOf(await answer({ hooks: [["agent_end", h]] }, event("agent_end", { reply: "done", held: -1 })));
    expect(error.code).toBe("bad_arguments");
    expect(error.msg).toMatch(/^event 'agent_end': .* at \.held$/);
  });

  test("Hook.answer throws BadArguments for a bad payload, and says what a good one answered", async () => {
    const h = hook("before_compact", (p) =>
      p.reason === "overflow" ? unhandled : { text: `compacting: ${p.reason}` },
    );
    await expect(h.answer({ reason: 7 }, testCtx())).rejects.toThrow(
      new BadArguments("expected string at .reason, got 7"),
    );
    expect(await h.answer({ reason: "threshold" }, testCtx())).toEqual({
      unhandled: false,
      verdict: { text: "compacting: threshold" },
    });
    expect(await h.answer({ reason: "overflow" }, testCtx())).toEqual({ unhandled: true });
  });

  test("Hook.run is the handler itself, callable with a typed payload in an author's own tests", async () => {
    const h = hook("session_start", (p) => ({ context: `session ${p.session_id} in ${p.workspace}` }));
    expect(h.event).toBe("session_start");
    expect(await h.run(start, testCtx())).toEqual({ context: "session s1 in /w" });
  });

  test("a table of hooks for different events is served with no casts, each hook getting its own payload", async () => {
    const hooks: Declared[] = [
      ["session_start", hook("session_start", (p) => ({ context: `hello ${p.session_id}` }))],
      ["context", hook("context", (p) => ({ context: `${p.messages.length} message(s)` }))],
      [
        "before_agent_start",
        hook("before_agent_start", async (p) => (p.prompt === "stop" ? { halt: "asked to stop" } : proceed)),
      ],
    ];
    expect(valueOf(await answer({ hooks }, event("session_start", start)))).toBe('{"context":"hello s1"}');
    expect(valueOf(await answer({ hooks }, event("context", PAYLOADS.context)))).toBe('{"context":"1 message(s)"}');
    expect(valueOf(await answer({ hooks }, event("before_agent_start", { prompt: "stop" })))).toBe(
      '{"halt":"asked to stop"}',
    );
  });
});

describe("answer(): what a hook replies, on the wire", () => {
  test("unhandled is answered with code unhandled, not as a verdict", async () => {
    const h = hook("tool_call", (p) => (p.tool === "sh" ? unhandled : proceed));
    expect(await answer({ hooks: [["tool_call", h]] }, event("tool_call", call))).toEqual({
      ok: false,
      error: { code: "unhandled", msg: "The hook for 'tool_call' does nothing for this event" },
    });
    expect(await answer({ hooks: [["tool_call", h]] }, event("tool_call", { ...call, tool: "ls" }))).toEqual({
      ok: true,
      value: "{}",
    });
  });

  test("unhandled is a frozen object recognised by identity: a look-alike is a verdict", async () => {
    expect(Object.isFrozen(unhandled)).toBe(true);
    // usage takes any object as its verdict, so a field named `unhandled` is just a field.
    const named = hook("usage", () => ({ unhandled: true }));
    expect(await answer({ hooks: [["usage", named]] }, event("usage", PAYLOADS.usage))).toEqual({
      ok: true,
      value: '{"unhandled":true}',
    });
    // A copy keeps the symbol key but is not the sentinel: a verdict JSON cannot hold.
    const copy = hook("usage", () => ({ ...unhandled }));
    expect(errorOf(await answer({ hooks: [["usage", copy]] }, event("usage", PAYLOADS.usage)))).toEqual({
      code: "crashed",
      msg: "hook 'usage' answered a verdict JSON cannot hold: the value has symbol keys",
    });
  });

  test("proceed is answered as {} for every event, and every event's hook may return it", async () => {
    expect(Object.isFrozen(proceed)).toBe(true);
    const hooks: Declared[] = [];
    const every = (e: HookEvent): AnyHook => {
      switch (e) {
        case "session_start":
          return hook(e, () => proceed);
        case "before_agent_start":
          return hook(e, () => proceed);
        case "context":
          return hook(e, () => proceed);
        case "tool_call":
          return hook(e, () => proceed);
        case "tool_result":
          return hook(e, () => proceed);
        case "agent_end":
          return hook(e, () => proceed);
        case "agent_settled":
          return hook(e, () => proceed);
        case "before_compact":
          return hook(e, () => proceed);
        case "usage":
          return hook(e, () => proceed);
        case "cap_call":
          return hook(e, () => proceed);
        case "route_call":
          return hook(e, () => proceed);
      }
    };
    for (const e of HOOK_EVENTS) hooks.push([e, every(e)]);
    for (const e of HOOK_EVENTS) {
      expect([e, await answer({ hooks }, event(e, PAYLOADS[e]))]).toEqual([e, { ok: true, value: "{}" }]);
    }
  });

  test("a verdict holding a Date is crashed, naming the path to it", async () => {
    const h = hook("context", (p) => ({ messages: [...p.messages, { role: "user", when: new Date(0) }] }));
    expect(errorOf(await answer({ hooks: [["context", h]] }, event("context", { messages: [] })))).toEqual({
      code: "crashed",
      msg: "hook 'context' answered a verdict JSON cannot hold: .messages.0.when is a Date, not plain data",
    });
  });

  test.each([
    ["a function", { result: () => "no" }, ".result is a function"],
    ["NaN", { arguments: { n: Number.NaN } }, ".arguments.n is NaN, which JSON cannot hold"],
    ["a hole", { arguments: [1, , 3] }, ".arguments.1 is a hole in the array"],
  ])("a verdict holding %s is crashed, naming the path", async (_what, verdict, why) => {
    const h = hook("tool_call", () => verdict);
    expect(errorOf(await answer({ hooks: [["tool_call", h]] }, event("tool_call", call)))).toEqual({
      code: "crashed",
      msg: `hook 'tool_call' answered a verdict JSON cannot hold: ${why}`,
    });
  });

  test("a verdict that refers back to itself is crashed, not a stack overflow", async () => {
    const args: Record<string, unknown> = {};
    args.self = args;
    const h = hook("tool_call", () => ({ arguments: args }));
    expect(errorOf(await answer({ hooks: [["tool_call", h]] }, event("tool_call", call))).msg).toBe(
      "hook 'tool_call' answered a verdict JSON cannot hold: .arguments.self refers back to itself",
    );
  });

  test("top-level fields left undefined are dropped; an undefined deeper in is crashed, naming it", async () => {
    const guard = hook("tool_call", (p) => ({
      block: p.tool === "rm" ? "no rm" : undefined,
      context: "checked",
      halt: undefined,
    }));
    expect(await answer({ hooks: [["tool_call", guard]] }, event("tool_call", call))).toEqual({
      ok: true,
      value: '{"context":"checked"}',
    });
    const rewrite = hook("tool_call", () => ({ arguments: { command: "ls", cwd: undefined } }));
    expect(errorOf(await answer({ hooks: [["tool_call", rewrite]] }, event("tool_call", call)))).toEqual({
      code: "crashed",
      msg: "hook 'tool_call' answered a verdict JSON cannot hold: .arguments.cwd is undefined",
    });
  });

  test("a verdict that is a class instance is crashed, not copied into a plain object", async () => {
    class Decision {
      readonly context = "from a class";
    }
    const h = hook("session_start", () => new Decision());
    expect(errorOf(await answer({ hooks: [["session_start", h]] }, event("session_start", start)))).toEqual({
      code: "crashed",
      msg: "hook 'session_start' answered a verdict JSON cannot hold: the value is a Decision, not plain data",
    });
  });

  test("the declared event and the hook's event must agree: mismatched_hook, and the hook never runs", async () => {
    let ran = false;
    const declared: Declared = ["tool_result", hook("tool_call", () => ((ran = true), proceed))];
    expect(errorOf(await answer({ hooks: [declared] }, event("tool_result", PAYLOADS.tool_result)))).toEqual({
      code: "mismatched_hook",
      msg: "The manifest declares 'tool_result' but the module's hook answers 'tool_call'",
    });
    expect(ran).toBe(false);
  });
});

describe("hook(): what does not compile", () => {
  test("a verdict field the event does not take, or a payload field it does not carry, is a type error", async () => {
    // @ts-expect-error session_start's verdict takes notes and context, not arguments.
    const stray = hook("session_start", () => ({ arguments: 1 }));
    // @ts-expect-error tool_call's verdict has no `reason` (block carries the reason).
    const reason = hook("tool_call", () => ({ block: "no", reason: "rm -rf" }));
    // @ts-expect-error block is text, not a flag.
    const flag = hook("tool_call", () => ({ block: true }));
    // @ts-expect-error session_start's payload has no prompt.
    const prompt = hook("session_start", (p) => ({ context: p.prompt }));
    // @ts-expect-error before_compact can add text, never veto, async or not.
    const veto = hook("before_compact", async () => ({ block: "not now" }));
    // @ts-expect-error an event that does not exist.
    const nowhere = hook("tool_called", () => proceed);
    // @ts-expect-error a Hook for one event is not a Hook for another.
    const wrong: Hook<"tool_result"> = hook("tool_call", () => proceed);
    // At run time the SDK sends what it is given; the broker refuses stray fields (wire/events.ts).
    expect(valueOf(await answer({ hooks: [["session_start", stray]] }, event("session_start", start)))).toBe(
      '{"arguments":1}',
    );
    expect([reason.event, flag.event, prompt.event, veto.event, nowhere.event, wrong.event]).toEqual([
      "tool_call",
      "tool_call",
      "session_start",
      "before_compact",
      "tool_called",
      "tool_call",
    ]);
  });
});
