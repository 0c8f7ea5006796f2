import * as v from "valibot";
import { HOOK_EVENTS } from "../../jail-runtime/ext/hook.js";
import { EventPayloads, EventVerdicts } from "../../jail-runtime/wire/events.js";

test("every hook event has one payload schema and one verdict schema, and nothing else does", () => {
  expect(Object.keys(EventPayloads).sort()).toEqual([...HOOK_EVENTS].sort());
  expect(Object.keys(EventVerdicts).sort()).toEqual([...HOOK_EVENTS].sort());
});

test("verdict fields an event does not take are refused, naming them", () => {
  const compact = v.safeParse(EventVerdicts.before_compact, { block: "no compaction" });
  expect(compact.success).toBe(false);
  expect(v.safeParse(EventVerdicts.tool_result, { arguments: {} }).success).toBe(false);
  expect(
    v.safeParse(EventVerdicts.tool_call, { block: "x", arguments: { a: 1 }, result: 2, notes: ["n"] }).success,
  ).toBe(true);
  expect(v.safeParse(EventVerdicts.cap_call, { block: "no egress from hooks" }).success).toBe(true);
});

test("usage answers are accepted whatever they hold (they are ignored)", () => {
  expect(v.safeParse(EventVerdicts.usage, { block: "ignored anyway" }).success).toBe(true);
});

test("payloads carry what the event says: agent_end's held count, usage's origin", () => {
  expect(v.safeParse(EventPayloads.agent_end, { reply: "done", held: 2 }).success).toBe(true);
  expect(v.safeParse(EventPayloads.agent_end, { reply: "done", held: -1 }).success).toBe(false);
  expect(
    v.safeParse(EventPayloads.usage, {
      seq: 1,
      origin: "reconciliation",
      model: "m",
      input_tokens: 1,
      output_tokens: 2,
    }).success,
  ).toBe(true);
  expect(
    v.safeParse(EventPayloads.usage, { seq: 1, origin: "guess", model: "m", input_tokens: 1, output_tokens: 2 })
      .success,
  ).toBe(false);
});
