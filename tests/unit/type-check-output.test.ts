/**
 * Reading `deno check`'s report (Deno 2.9.6's words, as captured): each type
 * error at its file, line and column in the extension folder, the SDK's files
 * named as the SDK's, and failures that are not type errors kept with where.
 */
import { parseOutput } from "../../broker/install/type-check.js";

const ROOT = "/tmp/ext";
const SDK = "/opt/tether/jail-runtime";

const OUTPUT = `TS2307 [ERROR]: Cannot find module 'file:///tmp/ext/missing.ts'.
    at file:///tmp/ext/index.ts:16:27

TS2322 [ERROR]: Type 'string' is not assignable to type 'number'.
const z: number = pad("a");
      ^
    at file:///tmp/ext/lib/util.ts:4:7

TS2322 [ERROR]: Type 'number' is not assignable to type 'string'.
f({ a: 1, b: 2 });
    ^
    at file:///tmp/ext/index.ts:18:5

    The expected type comes from property 'a' which is declared here on type '{ a: string; }'
    function f(x: { a: string }) { return x; }
                    ^
        at file:///tmp/ext/index.ts:17:17

TS2345 [ERROR]: Argument of type 'number' is not assignable to parameter of type 'string'.
    at file:///opt/tether/jail-runtime/ext/content.ts:3:1

Found 4 errors.

error: Type checking failed.
`;

test("each error at its place in the folder (or the SDK's), with its code and first line", () => {
  const { errors, other } = parseOutput(OUTPUT, ROOT, SDK);
  expect(errors).toEqual([
    { file: "index.ts", line: 16, column: 27, code: "TS2307", message: "Cannot find module 'missing.ts'." },
    {
      file: "lib/util.ts",
      line: 4,
      column: 7,
      code: "TS2322",
      message: "Type 'string' is not assignable to type 'number'.",
    },
    {
      file: "index.ts",
      line: 18,
      column: 5,
      code: "TS2322",
      message: "Type 'number' is not assignable to type 'string'.",
    },
    {
      file: "the SDK's ext/content.ts",
      line: 3,
      column: 1,
      code: "TS2345",
      message: "Argument of type 'number' is not assignable to parameter of type 'string'.",
    },
  ]);
  expect(other).toEqual([]);
});

test("a failure that is not a type error is kept, with where it was found", () => {
  const { errors, other } = parseOutput(
    'error: Module not found "file:///tmp/ext/gone.ts".\n    at file:///tmp/ext/index.ts:2:24\n',
    ROOT,
    SDK,
  );
  expect(errors).toEqual([]);
  expect(other).toEqual(['Module not found "gone.ts". at index.ts:2:24']);
});
