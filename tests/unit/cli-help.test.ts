/**
 * The CLI's help and docs/operators.md cannot drift: every command and option
 * the help lists, and every exit code, appears in the operator's guide.
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { EXIT, HELP } from "../../broker/cli/main.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const DOC = readFileSync(join(REPO, "docs", "operators.md"), "utf8");

/** The lines of one HELP section ("Commands:", "Options:"), up to the next blank line. */
function section(title: string): string[] {
  const lines = HELP.split("\n");
  const start = lines.indexOf(title);
  expect(start).toBeGreaterThanOrEqual(0);
  const end = lines.indexOf("", start);
  return lines.slice(start + 1, end === -1 ? undefined : end);
}

// A command line starts at two spaces; its continuation lines are indented further.
const COMMANDS = section("Commands:")
  .map((line) => /^ {2}([a-z]+)\b/.exec(line)?.[1])
  .filter((name): name is string => name !== undefined);

const OPTIONS = [...new Set([...HELP.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)].map((m) => m[0]))];

test("the help lists exactly the commands the CLI dispatches", () => {
  const source = readFileSync(join(REPO, "broker", "cli", "main.ts"), "utf8");
  const dispatched = [...source.matchAll(/case "([a-z]+)":|command === "([a-z]+)"/g)].map((m) => m[1] ?? m[2]);
  expect(COMMANDS.length).toBeGreaterThanOrEqual(10);
  expect([...COMMANDS].sort()).toEqual([...new Set(dispatched)].sort());
});

test.each(COMMANDS)("docs/operators.md documents `tether %s`", (command) => {
  expect(DOC).toContain(`tether ${command}`);
});

test("every option in the help appears in docs/operators.md", () => {
  expect(OPTIONS).toEqual(expect.arrayContaining(["--json", "--yes", "--home", "--only", "--ext", "--session", "--since", "--denied"]));
  expect(OPTIONS.filter((option) => !DOC.includes(option))).toEqual([]);
});

test("every exit code has a row in the docs' exit code table", () => {
  for (const code of Object.values(EXIT)) expect(DOC).toMatch(new RegExp(`^\\| \`?${code}\`? \\|`, "m"));
  expect(HELP).toContain("Exit codes:");
});
