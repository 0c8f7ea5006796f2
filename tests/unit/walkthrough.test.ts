/**
 * The walkthrough reader the newcomer-path test runs docs/authors.md with: it
 * finds every step the page shows, applies a diff at its one place, and its
 * line matching fails on any line the page and the command disagree on.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { applyPatch, matchLines, normalise, walkthroughSteps } from "../support/walkthrough.js";
import { REPO } from "../support/satellites.js";

const PAGE = [
  "# A page",
  "```console",
  "$ not in the walkthrough",
  "```",
  "<!-- walkthrough -->",
  "```console",
  "$ tether new x",
  "created x in x",
  "$ cd x",
  "```",
  '```ts title="index.ts"',
  "export const a = 1;",
  "```",
  '```diff title="index.ts"',
  "-export const a = 1;",
  "+export const a = 2;",
  " ",
  "```",
  "```sh",
  "$ shown, not run",
  "```",
  "```console",
  "rebuilt in 5 ms",
  "^C",
  "stopping",
  "```",
  "<!-- /walkthrough -->",
].join("\n");

test("the steps in the region, in order: commands with their output, files, diffs, more output, an interrupt", () => {
  expect(walkthroughSteps(PAGE)).toEqual([
    { kind: "run", command: "tether new x", expected: ["created x in x"] },
    { kind: "run", command: "cd x", expected: [] },
    { kind: "write", path: "index.ts", text: "export const a = 1;\n" },
    { kind: "patch", path: "index.ts", before: "export const a = 1;\n", after: "export const a = 2;\n" },
    { kind: "more", expected: ["rebuilt in 5 ms"] },
    { kind: "interrupt", expected: ["stopping"] },
  ]);
});

test("a page without the region, or a diff line without its mark, is an error", () => {
  expect(() => walkthroughSteps("# nothing here")).toThrow("no <!-- walkthrough … <!-- /walkthrough --> region");
  expect(() =>
    walkthroughSteps('<!-- walkthrough -->\n```diff title="a.ts"\nno mark\n```\n<!-- /walkthrough -->'),
  ).toThrow("a line must start with ' ', '-' or '+'");
});

test("a diff applies at its one place, and refuses context it cannot find or finds twice", () => {
  const step = { path: "a.ts", before: "b\nc", after: "b\nC" };
  expect(applyPatch("a\nb\nc\nd\n", step)).toBe("a\nb\nC\nd\n");
  expect(() => applyPatch("a\nd\n", step)).toThrow("its context must occur exactly once");
  expect(() => applyPatch("b\nc\nb\nc\n", step)).toThrow("its context must occur exactly once");
});

test("lines match exactly, ⋮ stands for any run of lines, and any other difference fails", () => {
  expect(matchLines(["a", "b"], ["a", "b"], true)).toBe(2);
  expect(matchLines(["a", "b"], ["a", "c"], true)).toBe(-1);
  expect(matchLines(["a"], ["a", "b"], true)).toBe(-1);
  expect(matchLines(["a"], ["a", "b"], false)).toBe(1);
  expect(matchLines(["a", "⋮", "d"], ["a", "b", "c", "d"], true)).toBe(4);
  expect(matchLines(["a", "⋮", "d"], ["a", "d"], true)).toBe(2);
  expect(matchLines(["a", "⋮"], ["a", "b", "c"], true)).toBe(3);
  expect(matchLines(["a", "⋮", "x"], ["a", "b", "c"], true)).toBe(-1);
  expect(matchLines([], [], true)).toBe(0);
});

test("times, sizes and the machine's root are what normalising takes out; words stay", () => {
  expect(normalise("built in 812 ms; checked in 5.4 s; ok (18ms) (794µs)")).toBe(
    "built in <time>; checked in <time>; ok (<time>) (<time>)",
  );
  expect(normalise("ok   bundle   158 KiB artifact")).toBe(normalise("ok   bundle   9 KiB artifact"));
  expect(normalise("into /tmp/r1/home/ada/x", "/tmp/r1")).toBe("into /home/ada/x");
  expect(normalise("3 tools, 1 hook, 4 fetches, 2 problems")).toBe("3 tools, 1 hook, 4 fetches, 2 problems");
});

test("docs/authors.md has a walkthrough the newcomer-path test can run", () => {
  const steps = walkthroughSteps(readFileSync(join(REPO, "docs", "authors.md"), "utf8"));
  expect(steps.filter((s) => s.kind === "run").length).toBeGreaterThan(10);
});
