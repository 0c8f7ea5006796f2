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

describe("precompile: the schemas a session will check, compiled one a turn until its open settles", () => {
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  /** Turns until `done()` holds (each precompile step is one turn); fails past a bound no step needs. */
  const until = async (done: () => boolean) => {
    for (let i = 0; i < 100 && !done(); i++) await turn();
    return done();
  };
  const schemas = ["a", "b", "c"].map((key) => ({ key, schema: SCHEMA }));

  test("while the open is pending, every schema is compiled, and checks answer as before", async () => {
    const checker = new ToolArgsChecker();
    checker.precompile(schemas, new Promise(() => {}));
    expect(await until(() => checker.compiled("c"))).toBe(true);
    expect(schemas.every((s) => checker.compiled(s.key))).toBe(true);
    expect(checker.check("b", SCHEMA, '{"n":"x"}')).toEqual({ ok: false, msg: "expected integer at .n" });
    expect(checker.compiled("d")).toBe(false);
  });

  test("an open that already settled compiles nothing; one that settles midway stops at the next turn", async () => {
    const settled = new ToolArgsChecker();
    settled.precompile(schemas, Promise.resolve());
    await settled.load();
    for (let i = 0; i < 5; i++) await turn();
    expect(schemas.some((s) => settled.compiled(s.key))).toBe(false);

    const midway = new ToolArgsChecker();
    let open!: () => void;
    midway.precompile(schemas, new Promise<void>((resolve) => (open = resolve)));
    expect(await until(() => midway.compiled("a"))).toBe(true);
    open();
    for (let i = 0; i < 5; i++) await turn();
    expect(schemas.map((s) => midway.compiled(s.key))).toEqual([true, false, false]);
  });

  test("a schema that does not compile is left to its first check; the others are compiled", async () => {
    const checker = new ToolArgsChecker();
    const broken = { key: "broken", schema: { type: "object", properties: { n: { $ref: "#/nowhere" } } } };
    checker.precompile([broken, ...schemas], new Promise(() => {}));
    expect(await until(() => checker.compiled("c"))).toBe(true);
    expect(checker.compiled("broken")).toBe(false);
  });
});
