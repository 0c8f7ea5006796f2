/**
 * The broker's tool-argument checker: a schema compiled once per key, and the
 * last answer reused only for the very same key and text (a hooked call's
 * arguments are checked before its hooks and again by the kernel).
 */
import fc from "fast-check";
import { ajvLoaded } from "../../broker/base/ajv.js";
import { ToolArgsChecker } from "../../broker/base/tool-args.js";

const SCHEMA = { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false };

test("a checker checks before anything loaded Ajv: it requires it then", () => {
  // This file's first test, in a module registry of its own: nothing preloaded Ajv (broker/base/ajv.ts).
  expect(ajvLoaded()).toBe(false);
  expect(new ToolArgsChecker().check("k", SCHEMA, '{"n":"x"}')).toEqual({ ok: false, msg: "expected integer at .n" });
  expect(ajvLoaded()).toBe(true);
});

test("every check answers for its own text and key, in any order of repeats", () => {
  const texts = ['{"n":1}', '{"n":"x"}', "{}", "not json", '{"n":2,"m":3}', '{"n":1}'];
  const keys = ["h1:t", "h2:t"];
  const fresh = (key: string, text: string) => new ToolArgsChecker().check(key, SCHEMA, text);
  const shared = new ToolArgsChecker();
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.constantFrom(...keys), fc.constantFrom(...texts)), { maxLength: 30 }), (asks) => {
      for (const [key, text] of asks) expect(shared.check(key, SCHEMA, text)).toEqual(fresh(key, text));
    }),
  );
  expect(shared.check("h1:t", SCHEMA, '{"n":"x"}')).toEqual({ ok: false, msg: "expected integer at .n" });
  expect(shared.check("h1:t", SCHEMA, '{"n":1}')).toEqual({ ok: true });
});
