/**
 * Ajv is loaded at its first use (broker/base/ajv.ts): a check before any
 * preload requires it on the spot, a preload settles once it is loaded, and
 * either way the checker compiles what it is given.
 */
import { ajvClass, ajvLoaded, preloadAjv } from "../../broker/base/ajv.js";
import { ToolArgsChecker } from "../../broker/base/tool-args.js";

const SCHEMA = { type: "object", properties: { n: { type: "integer" } }, required: ["n"] };

test("nothing loads Ajv until something needs it; a check then loads it on the spot", () => {
  // This file's module registry is its own: nothing before this test asked for Ajv.
  expect(ajvLoaded()).toBe(false);
  const checker = new ToolArgsChecker();
  expect(checker.ready).toBe(false);
  expect(checker.check("k", SCHEMA, '{"n":"x"}')).toEqual({ ok: false, msg: "expected integer at .n" });
  expect(checker.ready).toBe(true);
  expect(ajvLoaded()).toBe(true);
});

test("a preload settles with Ajv loaded, and the class it gives compiles", async () => {
  await preloadAjv();
  expect(ajvLoaded()).toBe(true);
  const validate = new (ajvClass())({ strict: false }).compile(SCHEMA);
  expect(validate({ n: 1 })).toBe(true);
  expect(validate({ n: 1.5 })).toBe(false);
  // The same promise every time: one import, however many sessions open.
  expect(preloadAjv()).toBe(preloadAjv());
});
