/**
 * The CLI's help and docs/operators.md cannot drift: every command's usage
 * lines appear in the docs as typed, every option any help names appears in
 * the operator's guide, and every exit code has a row. And the habits:
 * `tether <command> --help` and `tether help <command>` for every command,
 * `--version`, "did you mean" for a mistyped command or option.
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { COMMANDS, EXIT, HELP, commandHelp, main, synopses } from "../../broker/cli/main.js";
import { COLOUR } from "../../broker/cli/colour.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const DOC = readFileSync(join(REPO, "docs", "operators.md"), "utf8");
const AUTHORS = readFileSync(join(REPO, "docs", "authors.md"), "utf8");

/** The lines of one HELP section ("Commands:", "Options:"), up to the next blank line. */
function section(title: string): string[] {
  const lines = HELP.split("\n");
  const start = lines.indexOf(title);
  expect(start).toBeGreaterThanOrEqual(0);
  const end = lines.indexOf("", start);
  return lines.slice(start + 1, end === -1 ? undefined : end);
}

// A command line starts at two spaces; its continuation lines are indented further.
const LISTED = section("Commands:")
  .map((line) => /^ {2}([a-z]+)\b/.exec(line)?.[1])
  .filter((name): name is string => name !== undefined);

const NAMES = COMMANDS.map((c) => c.name);

/** Every `--option` written in `text`. */
const optionsIn = (text: string): string[] => [
  ...new Set([...text.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)].map((m) => m[0])),
];

/** Runs `main` with console output captured (stdout, stderr) and the exit code; one at a time. */
async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const saved = { log: console.log, error: console.error };
  console.log = (...a: unknown[]) => void out.push(a.join(" "));
  console.error = (...a: unknown[]) => void err.push(a.join(" "));
  try {
    const code = await main(argv, { TETHER_HOME: "/nonexistent/tether-help-test" });
    return { code, stdout: out.join("\n"), stderr: err.join("\n") };
  } finally {
    Object.assign(console, saved);
  }
}

test("the help lists exactly the commands of the table, in its order", () => {
  expect(NAMES.length).toBeGreaterThanOrEqual(14);
  expect(LISTED).toEqual(NAMES);
  expect(new Set(NAMES).size).toBe(NAMES.length);
});

test("docs/operators.md shows `tether help` exactly as it prints", () => {
  expect(DOC).toContain(`\`tether help\` prints:\n\n\`\`\`\n${HELP}\n\`\`\``);
  // And its example of one command's help, too.
  expect(DOC).toContain(`$ tether logs --help\n${commandHelp(COMMANDS.find((c) => c.name === "logs")!)}\n\`\`\``);
});

test.each(COMMANDS.map((c) => [c.name, c] as const))(
  "docs show every usage line of `tether %s` as typed",
  (_name, command) => {
    const doc = command.doc.startsWith("docs/authors.md") ? AUTHORS : DOC;
    for (const synopsis of synopses(command)) expect(doc).toContain(synopsis);
    // And operators.md at least names every command.
    expect(DOC).toContain(`tether ${command.name}`);
  },
);

test("every option in any help appears in docs/operators.md", () => {
  const all = [HELP, ...COMMANDS.map((c) => commandHelp(c))].flatMap(optionsIn);
  expect(all).toEqual(
    expect.arrayContaining([
      "--json",
      "--yes",
      "--home",
      "--only",
      "--ext",
      "--session",
      "--since",
      "--denied",
      "--version",
      "--follow",
      "--yes-widen",
    ]),
  );
  expect([...new Set(all)].filter((option) => !DOC.includes(option))).toEqual([]);
});

test("every exit code has a row in the docs' exit code table", () => {
  for (const code of Object.values(EXIT)) expect(DOC).toMatch(new RegExp(`^\\| \`?${code}\`? \\|`, "m"));
  expect(HELP).toContain("Exit codes:");
});

test.each(NAMES)(
  "`tether %s --help` and `tether help <command>` print its usage, its options and where the docs say more",
  async (name) => {
    const command = COMMANDS.find((c) => c.name === name)!;
    const flag = await run(name, "--help");
    const topic = await run("help", name);
    expect(flag.code).toBe(0);
    expect(topic).toEqual(flag);
    expect(flag.stdout).toBe(commandHelp(command));
    expect(flag.stdout.split("\n")[0]).toBe(`Usage: ${synopses(command)[0]}`);
    expect(flag.stdout).toContain("--home <dir>");
    expect(flag.stdout).toMatch(/\nMore: docs\/\S+\.md#[a-z0-9-]+$/);
    expect(flag.stderr).toBe("");
  },
);

test("no help line is wider than 104 columns", () => {
  const lines = [HELP, ...COMMANDS.map((c) => commandHelp(c))].flatMap((text) => text.split("\n"));
  expect(lines.filter((line) => line.length > 104)).toEqual([]);
});

test("--version names the package version and the wire protocol", async () => {
  const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string };
  const plain = await run("--version");
  const json = await run("--version", "--json");
  expect(plain).toEqual({ code: 0, stdout: `tether ${pkg.version} (wire protocol tether-deno/1)`, stderr: "" });
  expect(JSON.parse(json.stdout)).toEqual({ version: pkg.version, wire: "tether-deno/1" });
});

test("a mistyped command or option is answered with the nearest one; a far one without", async () => {
  // One at a time: run() captures the console.
  const command = await run("instal", "x");
  const option = await run("list", "--jsno");
  const far = await run("frobnicate");
  const farOption = await run("list", "--bogus");
  const topic = await run("help", "reveiw");
  expect(command).toEqual({
    code: 2,
    stdout: "",
    stderr: "tether: unknown command 'instal'. Did you mean 'install'? Run 'tether help'",
  });
  expect(option).toEqual({
    code: 2,
    stdout: "",
    stderr: "tether: unknown option '--jsno'. Did you mean '--json'? Run 'tether help'",
  });
  expect(far.stderr).toBe("tether: unknown command 'frobnicate'. Run 'tether help'");
  expect(farOption.stderr).toBe("tether: unknown option '--bogus'. Run 'tether help'");
  expect(topic).toEqual({
    code: 2,
    stdout: "",
    stderr: "tether help: unknown command 'reveiw'. Did you mean 'review'? Run 'tether help'",
  });
});

test("help is plain text unless painted; painted, only the headings change", () => {
  const plain = commandHelp(COMMANDS[0]!);
  const painted = commandHelp(COMMANDS[0]!, COLOUR);
  expect(plain).not.toContain("\u001b[");
  expect(painted).toContain("\u001b[1mUsage:\u001b[22m");
  expect(painted.replace(/\u001b\[\d+m/g, "")).toBe(plain);
});
