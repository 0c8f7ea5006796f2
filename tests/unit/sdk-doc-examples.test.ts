/**
 * The author SDK's JSDoc examples type-check: `deno check --doc-only` over
 * jail-runtime/ext/ (its test kit, ext/testing/, included) and jail-runtime/cap/,
 * with `@tether/ext`, `@tether/ext/testing` and `@tether/cap`
 * mapped to their sources and the SDK's npm packages (valibot, msgpackr)
 * read from this checkout's node_modules. Nothing is fetched (`--no-remote`).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { denoBinary } from "../../broker/jail/deno-binary.js";
import { sdkCheckConfig } from "../../broker/install/type-check.js";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const RUNTIME = join(REPO, "jail-runtime");
/** The SDK's source files, those whose JSDoc holds at least one example. */
const FILES = ["ext", "ext/testing", "cap"].flatMap((dir) =>
  readdirSync(join(RUNTIME, dir))
    .filter((name) => name.endsWith(".ts") && !name.endsWith(".d.ts"))
    .map((name) => join(RUNTIME, dir, name))
    .filter((file) => readFileSync(file, "utf8").includes("@example")),
);
/** How many ```ts blocks those examples hold: each one must be checked. */
const BLOCKS = FILES.reduce(
  (n, file) => n + [...readFileSync(file, "utf8").matchAll(/^\s*\*\s*```ts\s*$/gm)].length,
  0,
);

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tether-sdk-doc-"));
  const imports = {
    "@tether/ext": join(RUNTIME, "ext", "mod.ts"),
    "@tether/ext/testing": join(RUNTIME, "ext", "testing", "mod.ts"),
    "@tether/cap": join(RUNTIME, "cap", "mod.ts"),
  };
  // What `tether check` gives Deno, with the test kit mapped too.
  writeFileSync(join(dir, "deno.json"), JSON.stringify(sdkCheckConfig(imports)));
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ type: "module", dependencies: { valibot: "*", msgpackr: "*" } }),
  );
  symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Checked {
  code: number;
  output: string;
}

function check(files: readonly string[]): Promise<Checked> {
  const args = ["check", "--doc-only", "--config", join(dir, "deno.json"), "--no-remote", "--no-lock", ...files];
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: dir,
    DENO_DIR: join(dir, "deno-dir"),
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
  };
  return new Promise((done) => {
    execFile(denoBinary(), args, { cwd: dir, env, maxBuffer: 16 * 2 ** 20 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === "number" ? err.code : -1;
      done({ code, output: `${stdout}${stderr}` });
    });
  });
}

test("the SDK has examples to check", () => {
  expect(FILES.map((f) => f.slice(RUNTIME.length + 1))).toEqual(
    expect.arrayContaining(["ext/mod.ts", "ext/hook.ts", "cap/mod.ts", "cap/net.ts"]),
  );
  expect(BLOCKS).toBeGreaterThanOrEqual(30);
});

test("an example that does not type-check fails the check (the check is real)", async () => {
  const bad = join(dir, "bad.ts");
  writeFileSync(
    bad,
    [
      "/**",
      " * @example",
      " * ```ts",
      ' * import { text } from "@tether/ext";',
      ' * const n: number = text("not a number");',
      " * ```",
      " */",
      "export const x = 1;",
      "",
    ].join("\n"),
  );
  const r = await check([bad]);
  expect(r.code).not.toBe(0);
  expect(r.output).toMatch(/TS2322/);
}, 180_000);

test("every JSDoc example in jail-runtime/ext and jail-runtime/cap type-checks", async () => {
  const r = await check(FILES);
  if (r.code !== 0) throw new Error(`deno check --doc-only failed (exit ${r.code}):\n${r.output}`);
  // Each ```ts block was checked as its own module, `file.ts#from-to.ts`.
  const checked = r.output.split("\n").filter((line) => /^Check .*\.ts#\d+-\d+\.ts$/.test(line.trim()));
  expect(checked.length).toBe(BLOCKS);
}, 180_000);
