/**
 * A host-side job's script is built by esbuild once and kept beside the native
 * programs with its recipe (the build's settings, each input's hash); a process
 * uses the kept script only while the recipe, every input it names and the
 * script itself still hold, and only from files this user owns that nobody
 * else may write.
 */
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { jobScript, keptScript, recipeInputs } from "../../broker/jail/job-scripts.js";
import { REPO } from "./support/repo-files.js";

const sha256 = (bytes: string | Buffer) => createHash("sha256").update(bytes).digest("hex");

interface Recipe {
  settings: string;
  script: string;
  inputs: Record<string, string>;
}

let dir: string;
let script: string;
let recipeText: string;
const recipePath = () => join(dir, readdirSync(dir).find((n) => /^db-child-[0-9a-f]{16}\.recipe\.json$/.test(n))!);
const recipe = () => JSON.parse(readFileSync(recipePath(), "utf8")) as Recipe;
const spoil = (change: (r: Recipe) => void) => {
  const r = JSON.parse(recipeText) as Recipe;
  change(r);
  writeFileSync(recipePath(), JSON.stringify(r));
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tether-jobs-"));
  chmodSync(dir, 0o755);
  script = jobScript("db-child", dir);
  recipeText = readFileSync(recipePath(), "utf8");
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  // Every case starts from the recipe and script as built.
  chmodSync(dir, 0o755);
  writeFileSync(recipePath(), recipeText);
  chmodSync(recipePath(), 0o644);
});

test("the built script is kept under its hash, with a recipe naming every file it was built from", () => {
  const code = readFileSync(script, "utf8");
  expect(basename(script)).toBe(`db-child-${sha256(code).slice(0, 16)}.cjs`);
  const r = recipe();
  expect(r.script).toBe(basename(script));
  expect(Object.keys(r.inputs)).toContain(join(REPO, "broker/store/db-child.ts"));
  // What esbuild also reads: a package's entry, the compiler's settings.
  expect(Object.keys(r.inputs)).toEqual(
    expect.arrayContaining([join(REPO, "package.json"), join(REPO, "tsconfig.json")]),
  );
  expect(Object.keys(r.inputs).some((path) => path.includes("/node_modules/better-sqlite3/"))).toBe(true);
  for (const [path, hash] of Object.entries(r.inputs)) expect(sha256(readFileSync(path))).toBe(hash);
});

test("a kept script whose recipe holds is used again, with no build", () => {
  expect(keptScript("db-child", dir)).toBe(script);
});

test("a new process finds the kept script through its recipe and builds nothing", () => {
  // The same folder by another name: this process's memory of it does not answer.
  const alias = join(`${dir}-alias`);
  symlinkSync(dir, alias);
  try {
    const before = statSync(recipePath());
    expect(jobScript("db-child", alias)).toBe(join(alias, basename(script)));
    // A build would have kept its recipe again (a new file, renamed over this one).
    const after = statSync(recipePath());
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  } finally {
    rmSync(alias, { force: true });
  }
});

test("a folder that cannot be trusted keeps nothing, and the job still gets its script", () => {
  const open = mkdtempSync(join(tmpdir(), "tether-jobs-open-"));
  try {
    chmodSync(open, 0o777);
    const own = jobScript("db-child", open);
    expect(own.startsWith(`${open}/`)).toBe(false);
    expect(readFileSync(own, "utf8")).toBe(readFileSync(script, "utf8"));
    expect(keptScript("db-child", open)).toBeNull();
  } finally {
    rmSync(open, { recursive: true, force: true });
  }
});

const asRoot = process.getuid?.() === 0 ? test : test.skip;
asRoot("is not used: a recipe another user owns (as root: nobody's)", () => {
  chownSync(recipePath(), 65534, 65534);
  try {
    expect(keptScript("db-child", dir)).toBeNull();
  } finally {
    chownSync(recipePath(), 0, 0);
  }
});

test("a job with no kept script in the folder has none", () => {
  expect(keptScript("bundle-job", dir)).toBeNull();
});

const spoiled: ReadonlyArray<[string, () => void]> = [
  [
    "an input that changed since (its hash differs)",
    () =>
      spoil((r) => {
        const first = Object.keys(r.inputs)[0]!;
        r.inputs[first] = "0".repeat(64);
      }),
  ],
  [
    "an input that is gone",
    () =>
      spoil((r) => {
        r.inputs[join(dir, "gone.ts")] = "0".repeat(64);
      }),
  ],
  ["other build settings (another esbuild, other options)", () => spoil((r) => void (r.settings = "1".repeat(64)))],
  [
    "a recipe naming another job's script",
    () => spoil((r) => void (r.script = r.script.replace("db-child", "bundle-job"))),
  ],
  ["a recipe naming a script that is not there", () => spoil((r) => void (r.script = "db-child-0123456789abcdef.cjs"))],
  ["a recipe naming a path, not a name", () => spoil((r) => void (r.script = `../${r.script}`))],
  ["an input given by a relative path", () => spoil((r) => void (r.inputs["broker/x.ts"] = "0".repeat(64)))],
  ["a recipe that is not JSON", () => writeFileSync(recipePath(), "{")],
  ["a recipe past its bound", () => writeFileSync(recipePath(), " ".repeat(600 * 1024))],
  ["a recipe others may write", () => chmodSync(recipePath(), 0o666)],
  ["a folder others may write", () => chmodSync(dir, 0o777)],
];

test.each(spoiled)("is not used: %s", (_what, spoilIt) => {
  spoilIt();
  expect(keptScript("db-child", dir)).toBeNull();
});

test("is not used: a script changed after it was kept (its hash no longer matches its name)", () => {
  const code = readFileSync(script, "utf8");
  try {
    writeFileSync(script, `${code}\n// changed\n`);
    expect(keptScript("db-child", dir)).toBeNull();
  } finally {
    writeFileSync(script, code);
  }
  expect(keptScript("db-child", dir)).toBe(script);
});

test("no recipe vouches for a build whose inputs changed after it began, or that read what is not a file", () => {
  const src = mkdtempSync(join(tmpdir(), "tether-jobs-src-"));
  try {
    writeFileSync(join(src, "package.json"), "{}");
    writeFileSync(join(src, "job.ts"), "export {};\n");
    const began = Date.now() + 60_000; // as if the build began after these files were written
    const inputs = recipeInputs(["job.ts"], src, began);
    expect(inputs).toEqual({
      [join(src, "job.ts")]: sha256("export {};\n"),
      [join(src, "package.json")]: sha256("{}"),
    });
    // Written since the build began: the script may hold the older text.
    expect(recipeInputs(["job.ts"], src, Date.now() - 60_000)).toBeNull();
    expect(recipeInputs(["gone.ts"], src, began)).toBeNull();
    expect(recipeInputs(["."], src, began)).toBeNull();
  } finally {
    rmSync(src, { recursive: true, force: true });
  }
});
