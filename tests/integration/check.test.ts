/**
 * `tether check <folder>` end to end (the real binary, a real `deno check`, a
 * real dry boot in the jail), the library under it, and `tether install`
 * refusing what the dry boot finds with the same words.
 *
 * Every extension here is written into a temporary folder outside the repo,
 * as an author's would be.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { checkExtension, type CheckReport } from "../../broker/install/check.js";
import { envJail, envOptions } from "../support/env-options.js";
import { REPO } from "../support/satellites.js";

const BIN = join(REPO, "bin", "tether.js");
/** A spawn pays tsx's start-up, and a check also `deno check` (seconds each on a loaded machine). */
const SLOW = 240_000;

interface Run {
  readonly code: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

async function tether(home: string, ...args: string[]): Promise<Run> {
  const result = await execa(process.execPath, [BIN, ...args], {
    env: { TETHER_HOME: home },
    cwd: REPO,
    stdin: "ignore",
    reject: false,
    timeout: 200_000,
  });
  return { code: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "tether-check-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** An extension folder: a manifest declaring `tools` (and `more` TOML), and `files`. */
function extension(name: string, tools: readonly string[], files: Record<string, string>, more = ""): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const rows = tools.map((t) => `[[tool]]\nname = "${t}"\ndescription = "The ${t} tool."\n`).join("\n");
  writeFileSync(
    join(dir, "manifest.toml"),
    `name = "${name}"\nversion = "1.0.0"\ndescription = "A test extension."\nentry = "index.ts"\n${more}\n${rows}`,
  );
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

const GOOD = `import { outcome, text, type Tool } from "@tether/ext";
import { greeting } from "./lib.ts";

export const tools: Record<string, Tool> = {
  greet: () => outcome([text(greeting("Ada"))]),
};
`;
const LIB = `export function greeting(name: string): string {\n  return \`Hello, \${name}\`;\n}\n`;

/** Declares list_notes and add_note; exports add_note and foo; and has a type error on line 4. */
const MISMATCHED = `import { outcome, text, type Tool } from "@tether/ext";

export const tools: Record<string, Tool> = { add_note: () => outcome([text("added")]), foo: () => outcome([text("foo")]) };
const count: number = "three";
void count;
`;

/** A typo at top level: a ReferenceError when the module loads (line 5, column 13). */
const TYPO = `import { outcome, text, type Tool } from "@tether/ext";

const greeting = "hello";
export const tools: Record<string, Tool> = { greet: () => outcome([text(greeting)]) };
console.log(greetng);
`;

const stage = (report: CheckReport, name: string) => report.stages.find((s) => s.stage === name)!;

describe("tether check", () => {
  test(
    "a sound folder: every stage ok, exit 0, and what to run next; --json says the same",
    async () => {
      const dir = extension("sound", ["greet"], { "index.ts": GOOD, "lib.ts": LIB });
      const [plain, json] = await Promise.all([
        tether(join(root, "h-sound-1"), "check", dir),
        tether(join(root, "h-sound-2"), "check", dir, "--json"),
      ]);
      expect(plain.code).toBe(0);
      const lines = plain.stdout.split("\n");
      expect(lines[0]).toBe("ok   manifest sound 1.0.0: 1 tool, 0 hooks, 0 commands");
      expect(lines[1]).toMatch(/^ok {3}bundle {3}\d+ KiB artifact from 2 files of the folder, self-contained$/);
      expect(lines[2]).toMatch(/^ok {3}types {4}no type errors \(deno check index\.ts, [\d.]+ s\)$/);
      expect(lines[3]).toMatch(
        /^ok {3}boot {5}booted in the jail in \d+ ms; serves what the manifest declares: tools greet$/,
      );
      expect(lines[4]).toBe(`sound 1.0.0: no problems. Next: tether install ${dir}`);
      expect(plain.stderr).toContain("… type-checking index.ts and booting it once in the jail");
      expect(json.code).toBe(0);
      const report = JSON.parse(json.stdout) as CheckReport;
      expect(report).toMatchObject({ name: "sound", ok: true });
      expect(report.stages.map((s) => [s.stage, s.result])).toEqual([
        ["manifest", "ok"],
        ["bundle", "ok"],
        ["types", "ok"],
        ["boot", "ok"],
      ]);
    },
    SLOW,
  );

  test(
    "a type error and tools served but not declared and declared but not served are reported together, each with what to change; exit 1",
    async () => {
      const dir = extension("mismatched", ["list_notes", "add_note"], { "index.ts": MISMATCHED });
      const run = await tether(join(root, "h-mismatched"), "check", dir);
      expect(run.code).toBe(1);
      const lines = run.stdout.split("\n");
      expect(lines).toContain("FAIL types    1 problem");
      expect(lines).toContain("       index.ts:4:7: TS2322 Type 'string' is not assignable to type 'number'.");
      expect(lines).toContain("FAIL boot     2 problems");
      expect(lines).toContain(
        "       declared in manifest.toml but not exported from index.ts: tool list_notes (export it in `tools`, or remove its [[tool]] row)",
      );
      expect(lines).toContain(
        '       exported from index.ts but not declared in manifest.toml: tool foo (add a [[tool]] row with name = "foo", or remove it from `tools`)',
      );
      expect(lines.at(-1)).toBe(
        `mismatched 1.0.0: 3 problems: change what each says, then run tether check ${dir} again`,
      );
      expect(run.stdout).not.toMatch(/reinstall/i);
    },
    SLOW,
  );

  test(
    "a module that throws at top level is reported with its error at its own file, line and column",
    async () => {
      const dir = extension("typo", ["greet"], { "index.ts": TYPO });
      const run = await tether(join(root, "h-typo"), "check", dir);
      expect(run.code).toBe(1);
      expect(run.stdout).toContain(
        "       index.ts throws while loading, so nothing it exports is served: ReferenceError: greetng is not defined at index.ts:5:13. Fix the code that runs at top level",
      );
      expect(run.stdout).toContain("       index.ts:5:13: TS2552 Cannot find name 'greetng'. Did you mean 'greeting'?");
    },
    SLOW,
  );

  test(
    "no folder is a usage error (exit 2); a folder without a manifest fails the manifest and skips the rest",
    async () => {
      mkdirSync(join(root, "empty"), { recursive: true });
      const [usage, empty] = await Promise.all([
        tether(join(root, "h-usage"), "check"),
        tether(join(root, "h-empty"), "check", join(root, "empty")),
      ]);
      expect(usage).toMatchObject({ code: 2, stdout: "" });
      expect(usage.stderr).toContain("tether check: missing the extension folder: tether check <dir>");
      expect(empty.code).toBe(1);
      expect(empty.stdout.split("\n").slice(0, 4)).toEqual([
        "FAIL manifest 1 problem",
        `       ${join(root, "empty", "manifest.toml")}: cannot read the manifest (is ${join(root, "empty")} an extension folder?)`,
        "skip bundle   the manifest must be fixed first",
        "skip types    the manifest must be fixed first",
      ]);
    },
    SLOW,
  );
});

describe("tether check reads the rules against the operator's policy, as review does", () => {
  test(
    "a loopback rule the policy leaves unreachable is a warning naming the switch (exit 0); a policy that reaches it, none",
    async () => {
      const dir = extension(
        "local-api",
        ["greet"],
        { "index.ts": GOOD, "lib.ts": LIB },
        '[net]\nallow = ["http://127.0.0.1:8080/api", "https://api.example.com"]\n',
      );
      const strict = join(root, "h-policy-strict");
      const open = join(root, "h-policy-open");
      mkdirSync(open, { recursive: true });
      writeFileSync(join(open, "policy.toml"), '[net]\nreach = ["loopback"]\n');
      const [warned, quiet] = await Promise.all([tether(strict, "check", dir), tether(open, "check", dir)]);
      expect(warned.code).toBe(0);
      const file = join(strict, "policy.toml");
      expect(warned.stdout.split("\n")).toContain(
        `warn policy   http://127.0.0.1:8080/api: every call to it is refused (operator:no-private) under ${file}: ` +
          `add "loopback" to [net] reach in ${file} to let approved rules reach loopback addresses`,
      );
      expect(warned.stdout).not.toContain("https://api.example.com:");
      expect(quiet.code).toBe(0);
      expect(quiet.stdout).not.toContain("warn policy");
    },
    SLOW,
  );
});

describe("the check as a library (checkExtension), without the type check", () => {
  const options = () => ({
    jail: envJail(),
    ...(envOptions().sandbox !== undefined ? { sandbox: envOptions().sandbox } : {}),
    types: false as const,
  });

  test("an import outside the folder fails the bundle, and the type check and the boot are skipped (they need its confinement)", async () => {
    writeFileSync(join(root, "outside.ts"), "export const secret = 1;\n");
    const dir = extension("escapes", ["greet"], {
      "index.ts": `import { secret } from "../outside.ts";\n${GOOD}void secret;\n`,
      "lib.ts": LIB,
    });
    const report = await checkExtension(dir, options());
    expect(stage(report, "bundle").result).toBe("failed");
    expect(stage(report, "bundle").problems[0]).toMatch(
      /import '\.\.\/outside\.ts' in index\.ts reaches outside the extension folder/,
    );
    expect([stage(report, "types").result, stage(report, "boot").result]).toEqual(["skipped", "skipped"]);
    expect(report.ok).toBe(false);
  });

  test("hooks: one declared but not exported, one exported but not declared", async () => {
    const index = `import { hook, proceed, type Tool, outcome, text } from "@tether/ext";
export const tools: Record<string, Tool> = { greet: () => outcome([text("hi")]) };
export const hooks = { context: hook("context", () => proceed) };
`;
    const dir = extension("hooked", ["greet"], { "index.ts": index }, '[[hook]]\nevent = "tool_call"\n');
    const report = await checkExtension(dir, options());
    expect(stage(report, "boot").problems).toEqual([
      'declared in manifest.toml but not exported from index.ts: hook tool_call (add it to the exported `hooks` (tool_call: hook("tool_call", …)), or remove its [[hook]] row)',
      'exported from index.ts but not declared in manifest.toml: hook context (add a [[hook]] row with event = "context", or remove it from `hooks`)',
    ]);
    expect(stage(report, "types")).toMatchObject({ result: "skipped", summary: "not asked for" });
  });

  test("a throw inside a helper at load names the helper's file and the line that called it", async () => {
    const lib = 'export function load(): string {\n  throw new Error("config missing");\n}\n';
    const index = `import { outcome, text, type Tool } from "@tether/ext";\nimport { load } from "./config.ts";\nconst config = load();\nexport const tools: Record<string, Tool> = { greet: () => outcome([text(config)]) };\n`;
    const dir = extension("helper-throws", ["greet"], { "index.ts": index, "config.ts": lib });
    const report = await checkExtension(dir, options());
    expect(stage(report, "boot").problems).toEqual([
      "index.ts throws while loading, so nothing it exports is served: Error: config missing at load (config.ts:2:9) (called from index.ts:3:16). Fix the code that runs at top level",
    ]);
  });
});

describe("tether install runs the dry boot and refuses with the same words", () => {
  test(
    "a mismatched or throwing module is not installed (exit 1, nothing listed); a type error alone is installed (install does not type-check)",
    async () => {
      const home = join(root, "h-install");
      const mismatched = extension("mismatched2", ["list_notes", "add_note"], { "index.ts": MISMATCHED });
      const typo = extension("typo2", ["greet"], { "index.ts": TYPO });
      const typed = extension("typed", ["greet"], {
        "index.ts": `${GOOD}const n: number = "x";\nvoid n;\n`,
        "lib.ts": LIB,
      });
      const first = await tether(home, "install", mismatched); // the first open of a fresh home goes alone
      const [second, third] = await Promise.all([tether(home, "install", typo), tether(home, "install", typed)]);
      expect(first.code).toBe(1);
      expect(first.stderr).toContain(
        "… booting mismatched2 once in the jail (a dry boot: what it serves against what it declares)",
      );
      expect(first.stderr).toContain(
        "tether install: mismatched2 is not installed: declared in manifest.toml but not exported from index.ts: tool list_notes (export it in `tools`, or remove its [[tool]] row); " +
          'exported from index.ts but not declared in manifest.toml: tool foo (add a [[tool]] row with name = "foo", or remove it from `tools`). ' +
          `Run: tether check ${mismatched} for the whole report`,
      );
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(
        "typo2 is not installed: index.ts throws while loading, so nothing it exports is served: ReferenceError: greetng is not defined at index.ts:5:13",
      );
      expect(third.code).toBe(0);
      const list = await tether(home, "list", "--json");
      expect((JSON.parse(list.stdout) as Array<{ name: string }>).map((r) => r.name)).toEqual(["typed"]);
    },
    SLOW,
  );
});
