/**
 * A line of an artifact traced back to its module by esbuild's `// path`
 * markers, and to its line there when the code appears once in that file.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { placeOf, rewritePlaces } from "../../broker/install/artifact-lines.js";

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "tether-artifact-lines-"));
  writeFileSync(
    join(root, "index.ts"),
    'import { helper } from "./lib.ts";\n\nconst greeting: string = "hello";\nconsole.log(helper(greetng));\nconsole.log(1);\nconsole.log(1);\n',
  );
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const ARTIFACT = [
  "// ../../opt/tether/jail-runtime/ext/runtime.ts",
  "function serving() {}",
  "",
  "// index.ts",
  'var greeting = "hello";',
  "console.log(helper(greetng));",
  "console.log(1);",
  "",
  "// tether-entry:tether-entry.js",
  "await serving();",
].join("\n");

test("a line of the module is placed at its line and column in the file", () => {
  expect(placeOf(ARTIFACT, 6, 20, root)).toEqual({
    file: "index.ts",
    line: 4,
    column: 20,
    code: "console.log(helper(greetng));",
  });
});

test("code that is not found once in the file names the file and the code; the SDK and the entry are named as such", () => {
  expect(placeOf(ARTIFACT, 7, 1, root)).toEqual({ file: "index.ts", code: "console.log(1);" });
  expect(placeOf(ARTIFACT, 2, 1, root)).toMatchObject({ file: "the SDK (ext/runtime.ts)" });
  expect(placeOf(ARTIFACT, 10, 1, root)).toMatchObject({ file: "the generated entry" });
});

test("a stack's artifact places are rewritten; others are left alone", () => {
  const stack = "at file:///opt/tether/satellite.js:6:20\n    at other.js:1:1";
  expect(rewritePlaces(stack, ["/opt/tether/satellite.js"], ARTIFACT, root)).toBe(
    "at index.ts:4:20\n    at other.js:1:1",
  );
});
