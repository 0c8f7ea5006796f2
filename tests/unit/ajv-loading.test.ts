/**
 * Ajv is loaded at its first use (broker/base/ajv.ts): a preload settles once
 * it is loaded, and the class it loaded is the one every checker compiles
 * with. (A check before any preload, which requires Ajv on the spot, is
 * tests/unit/tool-args.test.ts's first test.)
 */
import { ajvClass, ajvLoaded, preloadAjv } from "../../broker/base/ajv.js";
import { ToolArgsChecker } from "../../broker/base/tool-args.js";

const SCHEMA = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };

test("a preload settles with Ajv loaded, and the class it loaded compiles", async () => {
  // This file's module registry is its own, and this is its first test: nothing asked for Ajv yet.
  expect(ajvLoaded()).toBe(false);
  const preloading = preloadAjv();
  // The same promise every time: one import, however many sessions open.
  expect(preloadAjv()).toBe(preloading);
  await preloading;
  expect(ajvLoaded()).toBe(true);
  const checker = new ToolArgsChecker();
  expect(checker.check("k", SCHEMA, '{"n":"x"}')).toEqual({ ok: false, msg: "expected integer at .n" });
  const validate = new (ajvClass())({ strict: false }).compile(SCHEMA);
  expect(validate({ n: 1 })).toBe(true);
  expect(validate({ n: 1.5 })).toBe(false);
});
