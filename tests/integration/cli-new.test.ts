/**
 * `tether new`: the scaffold passes `deno test` and `deno check` at once,
 * offline, and `tether install` accepts it and serves its tool; a bad name or
 * a folder already in use is refused with what to change.
 */
import { jest } from "@jest/globals";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { main } from "../../broker/cli/main.js";
import { runNew } from "../../broker/cli/new.js";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { envOptions } from "../support/env-options.js";

let tmp: string;
let dir: string;
let deno: Record<string, string>;

function runDeno(args: readonly string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile(
      denoBinary(),
      args,
      { cwd, env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...deno }, maxBuffer: 16 * 2 ** 20 },
      (err, stdout, stderr) => {
        done({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, output: `${stdout}${stderr}` });
      },
    );
  });
}

/** Runs the command with stderr captured: its exit code and what it printed there. */
async function refusedNew(args: readonly string[], folder?: string): Promise<{ code: number; said: string }> {
  const said: string[] = [];
  const spy = jest.spyOn(console, "error").mockImplementation((line: string) => void said.push(line));
  try {
    return { code: await runNew(args, folder), said: said.join("\n") };
  } finally {
    spy.mockRestore();
  }
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-new-"));
  deno = { HOME: join(tmp, "deno-home"), DENO_DIR: join(tmp, "deno-dir"), DENO_NO_UPDATE_CHECK: "1" };
  dir = join(tmp, "greeter");
  const log = jest.spyOn(console, "log").mockImplementation(() => {});
  const progress = jest.spyOn(process.stderr, "write").mockImplementation(() => true);
  try {
    expect(await main(["new", "greeter", "--dir", dir])).toBe(0);
    expect(log).toHaveBeenCalledWith(expect.stringContaining("Next: cd "));
  } finally {
    log.mockRestore();
    progress.mockRestore();
  }
}, 180_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

test("the folder has the manifest (schema first), the entry, its tests, the import setup and the SDK", () => {
  const manifest = readFileSync(join(dir, "manifest.toml"), "utf8");
  expect(manifest.split("\n")[0]).toBe("#:schema ./node_modules/@tether/ext/manifest.schema.json");
  expect(manifest).toContain('name = "greeter"');
  for (const file of [
    "index.ts",
    "index_test.ts",
    "package.json",
    "deno.json",
    ".gitignore",
    "node_modules/@tether/ext/manifest.schema.json",
    "node_modules/@tether/cap/index.js",
  ]) {
    expect(existsSync(join(dir, file))).toBe(true);
  }
  expect(JSON.parse(readFileSync(join(dir, "deno.json"), "utf8"))).toMatchObject({
    nodeModulesDir: "manual",
    compilerOptions: { skipLibCheck: true },
  });
});

test("deno test and deno check pass in it at once, offline", async () => {
  // As `tether new` says to run it: the kit reads manifest.toml and judges fetches by its rules, without a word.
  const tested = await runDeno(["test", "--no-remote", "--allow-read=."], dir);
  if (tested.code !== 0) throw new Error(`deno test failed:\n${tested.output}`);
  expect(tested.output).toMatch(/ok \| 4 passed \| 0 failed/);
  expect(tested.output).not.toContain("testKit could not read");
  const checked = await runDeno(["check", "--no-remote", "index.ts", "index_test.ts"], dir);
  if (checked.code !== 0) throw new Error(`deno check failed:\n${checked.output}`);
}, 180_000);

test("tether install accepts it, and its tool and hook answer from a satellite", async () => {
  const home = join(tmp, "home");
  mkdirSync(home);
  const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
  try {
    const { installed } = await broker.registry.install(dir);
    expect(installed.manifest.hook.map((h) => h.event)).toEqual(["tool_call"]);
    broker.registry.approve("greeter");
    expect(await broker.callTool("greeter", "greet", '{"name":"Ada"}', { session: "default" })).toEqual({
      ok: true,
      value: { content: [{ type: "text", text: "Hello, Ada! (greeting number 1)" }], terminate: false },
    });
    const verdict = await broker.callHook(
      "greeter",
      "tool_call",
      JSON.stringify({ tool: "greet", call_id: "c1", arguments: { name: "ADA" } }),
      { session: "default" },
    );
    expect(JSON.stringify(verdict)).toContain("do not shout");
  } finally {
    await broker.close();
  }
}, 120_000);

test.each([
  [
    "My Ext",
    "'My Ext' is not an extension name: expected a lowercase name (a-z, 0-9, _ and -, at most 64, starting with a letter); try 'my-ext'",
  ],
  ["1st", "try 'st'"],
  ["hooks", "'hooks' is reserved for a built-in extension; pick another name, e.g. 'hooks-ext'"],
])("a bad name (%s) is refused with what to change, and nothing is written", async (name, message) => {
  const folder = join(tmp, `bad-${Math.random().toString(36).slice(2)}`);
  const { code, said } = await refusedNew([name], folder);
  expect(code).toBe(2);
  expect(said).toContain(message);
  expect(existsSync(folder)).toBe(false);
});

test("a folder that is not empty is refused, and left as it was", async () => {
  const folder = join(tmp, "taken");
  mkdirSync(folder);
  writeFileSync(join(folder, "notes.txt"), "mine\n");
  const { code, said } = await refusedNew(["greeter"], folder);
  expect(code).toBe(2);
  expect(said).toContain(
    `${folder} already exists and is not empty; pick another folder with --dir <folder>, or empty this one`,
  );
  expect(readFileSync(join(folder, "notes.txt"), "utf8")).toBe("mine\n");
  expect(existsSync(join(folder, "manifest.toml"))).toBe(false);
});

test("no name is a usage error that shows the usage", async () => {
  const { code, said } = await refusedNew([]);
  expect(code).toBe(2);
  expect(said).toBe("tether new: missing the extension name: tether new <name> [--dir <folder>]");
});
