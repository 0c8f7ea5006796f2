/**
 * A database jail's answers are read as bounded lines (broker/store/bounded-lines.ts)
 * and checked (DbResponseSchema): a line cut off when the process was killed mid-write
 * is dropped, an overlong one stops the reading, and no answer that is not one passes.
 */
import { PassThrough } from "node:stream";
import * as v from "valibot";
import { readLines } from "../../broker/store/bounded-lines.js";
import { DbResponseSchema, decodeValue, encodeValue } from "../../broker/store/db-wire.js";

function feed(chunks: string[], max = 64): { lines: string[]; tooLong: number } {
  const stream = new PassThrough();
  const out = { lines: [] as string[], tooLong: 0 };
  readLines(
    stream,
    max,
    (l) => out.lines.push(l),
    () => out.tooLong++,
  );
  for (const c of chunks) stream.write(Buffer.from(c));
  stream.end();
  return out;
}

test("lines split across chunks and several in one chunk come out whole, in order", () => {
  expect(feed(['{"a"', ':1}\n{"b":2}\n{"c"', ":3}\n"]).lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
});

test("a line cut off at the end (a process killed mid-write) is never handed on", () => {
  expect(feed(['{"id":1,"result":{"ok":true}}\n{"id":2,"result":"unterminat']).lines).toEqual([
    '{"id":1,"result":{"ok":true}}',
  ]);
});

test("a line longer than the bound stops the reading and says so", () => {
  const r = feed(["x".repeat(40), "x".repeat(40), "\n", "after\n"]);
  expect(r.tooLong).toBe(1);
  expect(r.lines).toEqual([]);
});

test.each([
  ["not an object", "[]"],
  ["no id", '{"result":{"ok":true,"kind":"select","table":"t","value":[],"bytes":0}}'],
  ["a result that is neither shape", '{"id":1,"result":{"ok":"yes"}}'],
  ["a refusal with no message", '{"id":1,"result":{"ok":false,"kind":"x","table":"","rule":"r"}}'],
])("an answer that is not one is refused: %s", (_what, line) => {
  expect(() => v.parse(DbResponseSchema, JSON.parse(line))).toThrow();
});

test("a row with a column named $bytes (or any $-name) stays a row; bytes stay bytes", () => {
  const rows = [{ $bytes: "aGVsbG8=", $$x: 1, plain: new Uint8Array([1, 2]) }];
  expect(decodeValue(JSON.parse(JSON.stringify(encodeValue(rows))))).toEqual(rows);
});
