/**
 * The wire's kinds table (jail-runtime/wire/kinds.ts): the built-in kinds are
 * its keys (the session-facing ones among them), an added kind may take no
 * built-in's name, and a call frame tells the two apart by the mark.
 */
import * as v from "valibot";
import { Call, CallKind } from "../../jail-runtime/wire/frames.js";
import { addedKindOf, BUILTIN_KINDS, defineKind, kindOnWire } from "../../jail-runtime/wire/kinds.js";
import { SESSION_KINDS } from "../../jail-runtime/wire/session-kinds.js";

const call = { t: "call", id: 1, token: "tok", name: "n", args: "{}", strand: "", deadline_ms: 1000 };

test("CallKind is the table's keys, and every session-facing kind is one of them", () => {
  expect([...CallKind.options].sort()).toEqual(Object.keys(BUILTIN_KINDS).sort());
  for (const kind of SESSION_KINDS) expect(CallKind.options).toContain(kind);
});

test("an added kind may not take a built-in kind's name, boot, or a malformed one", () => {
  const schemas = { payload: v.object({}), answer: v.object({}) };
  expect(() => defineKind({ name: "tool", ...schemas })).toThrow("kind 'tool'");
  expect(() => defineKind({ name: "boot", ...schemas })).toThrow("kind 'boot'");
  expect(() => defineKind({ name: "Greet", ...schemas })).toThrow("kind 'Greet'");
  expect(defineKind({ name: "greet", ...schemas }).name).toBe("greet");
});

test("a call frame names an added kind +<name> and a built-in one as it is; a bare unknown word is refused", () => {
  expect(kindOnWire("tool")).toBe("tool");
  expect(kindOnWire("greet")).toBe("+greet");
  expect(addedKindOf("+greet")).toBe("greet");
  expect(addedKindOf("tool")).toBeUndefined();
  expect(v.safeParse(Call, { ...call, kind: "+greet" }).success).toBe(true);
  expect(v.safeParse(Call, { ...call, kind: "greet" }).success).toBe(false);
  expect(v.safeParse(Call, { ...call, kind: "+Greet" }).success).toBe(false);
  expect(v.safeParse(Call, { ...call, kind: `+${"a".repeat(40)}` }).success).toBe(false);
});
