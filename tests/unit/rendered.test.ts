import fc from "fast-check";
import { rendered } from "../../jail-runtime/ext/rendered.js";

test("rendered() renders plain JSON data exactly as JSON.stringify does", () => {
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      expect(rendered(value)).toEqual({ ok: true, json: JSON.stringify(value) });
    }),
    { numRuns: 300 },
  );
});

test.each([
  [{ a: undefined }, ".a is undefined"],
  [{ a: [1, () => 1] }, ".a.1 is a function"],
  [{ n: Number.NaN }, ".n is NaN, which JSON cannot hold"],
  [{ n: Infinity }, ".n is Infinity, which JSON cannot hold"],
  [{ b: 10n }, ".b is a bigint"],
  [{ when: new Date(0) }, ".when is a Date, not plain data"],
  [{ m: new Map() }, ".m is a Map, not plain data"],
  [[1, , 3], ".1 is a hole in the array"],
  [undefined, "the value is undefined"],
  [Symbol("s"), "the value is a symbol"],
])("rendered() refuses %p rather than rendering null", (value, error) => {
  expect(rendered(value)).toEqual({ ok: false, error });
});

test("rendered() refuses cycles but accepts the same object twice", () => {
  const shared = { x: 1 };
  expect(rendered({ a: shared, b: shared })).toEqual({ ok: true, json: '{"a":{"x":1},"b":{"x":1}}' });
  const loop: Record<string, unknown> = {};
  loop.self = loop;
  expect(rendered(loop)).toEqual({ ok: false, error: ".self refers back to itself" });
});
