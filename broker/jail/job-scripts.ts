/**
 * The scripts host-side jobs run inside the jail (host-job.ts): the broker's
 * own sources (never an extension's), bundled by esbuild into one CommonJS
 * file each with every package they import, so the jail gets one file to
 * run and no `node_modules/` to see. Kept in build/jobs/ beside the native
 * programs, named by their hash, each with its recipe: the build's settings
 * and the hash of every file it was built from. A process uses the kept
 * script while its recipe still holds, and builds it (~150 ms of esbuild,
 * blocking, in every process that ran a job) only when a source changed.
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as v from "valibot";
import { readKept, writeKept } from "./kept-file.js";
import { nativeDir } from "./native/compile.js";

export type JobScript = "bundle-job" | "db-child";

const HERE = dirname(fileURLToPath(import.meta.url));

/** Each job's entry, beside the module that uses it (from dist/ too, where broker is compiled). */
const ENTRIES: Readonly<Record<JobScript, string>> = {
  "bundle-job": "../install/bundle-job",
  "db-child": "../store/db-child",
};

function entryOf(script: JobScript): string {
  for (const ext of [".ts", ".js"]) {
    const path = resolve(HERE, `${ENTRIES[script]}${ext}`);
    if (existsSync(path)) return path;
  }
  throw new Error(`Cannot find the source of the ${script} job beside the broker`);
}

/** This process's scripts, by folder and job. */
const built = new Map<string, string>();

/**
 * esbuild's API, loaded at the first build: most commands, and every `tether mcp` or
 * `tether serve` that builds no job, start without it. Required, not imported: jobScript
 * stays synchronous (esbuild's package is CommonJS either way).
 */
let api: typeof import("esbuild") | null = null;
function esbuild(): typeof import("esbuild") {
  api ??= createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
  return api;
}

const SHA256 = /^[0-9a-f]{64}$/;

/** A kept script's recipe: what it was built from, bounded (a job bundles a few dozen files). */
const Recipe = v.object({
  settings: v.pipe(v.string(), v.regex(SHA256)),
  script: v.pipe(v.string(), v.regex(/^[a-z-]+-[0-9a-f]{16}\.cjs$/)),
  inputs: v.pipe(
    v.record(v.pipe(v.string(), v.startsWith("/"), v.maxLength(4096)), v.pipe(v.string(), v.regex(SHA256))),
    v.check((inputs) => Object.keys(inputs).length <= 1024, "too many inputs"),
  ),
});
const RECIPE_BYTES = 512 * 1024;
const SCRIPT_BYTES = 64 * 1024 * 1024;

function sha256(bytes: string | Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

type JobBuild = import("esbuild").BuildOptions & { absWorkingDir: string; write: false; metafile: true };

function buildOptions(script: JobScript): JobBuild {
  const entry = entryOf(script);
  return {
    entryPoints: [entry],
    // Paths in the output are relative to the entry's folder, whatever this process's cwd.
    absWorkingDir: dirname(entry),
    bundle: true,
    write: false,
    metafile: true,
    format: "cjs",
    platform: "node",
    target: "node20",
    logLevel: "silent",
    legalComments: "none",
    // esbuild's own API says a bundled copy should be told where its binary is: ESBUILD_BINARY_PATH, set by the job.
    define: { "import.meta.url": "__tether_job_url" },
    banner: { js: 'const __tether_job_url = require("node:url").pathToFileURL(__filename).href;' },
  };
}

/** The build's settings and esbuild's version (its package.json, not esbuild itself), as one hash. */
function settingsOf(options: JobBuild): string {
  const { version } = createRequire(import.meta.url)("esbuild/package.json") as { version: string };
  return sha256(JSON.stringify({ esbuild: version, options }));
}

/**
 * A recipe per job and settings: the broker run from its sources (tsx, the tests) and
 * from dist/ build the same job from different entries, and would otherwise replace
 * each other's recipe at every turn.
 */
function recipeFile(script: JobScript, dir: string, settings: string): string {
  return join(dir, `${script}-${settings.slice(0, 16)}.recipe.json`);
}

/** The kept script in `dir`, when its recipe, every input it names and the script itself still hold; else null. */
export function keptScript(script: JobScript, dir: string, settings = settingsOf(buildOptions(script))): string | null {
  const text = readKept(recipeFile(script, dir, settings), RECIPE_BYTES);
  if (text === null) return null;
  try {
    const recipe = v.parse(Recipe, JSON.parse(text));
    if (recipe.settings !== settings || !recipe.script.startsWith(`${script}-`)) return null;
    for (const [path, hash] of Object.entries(recipe.inputs)) if (sha256(readFileSync(path)) !== hash) return null;
    const file = join(dir, recipe.script);
    const code = readKept(file, SCRIPT_BYTES);
    return code !== null && sha256(code).startsWith(recipe.script.slice(script.length + 1, -4)) ? file : null;
  } catch {
    return null;
  }
}

/** The job's script, built unless a kept one's recipe holds; `dir` defaults to build/ beside build/native. */
export function jobScript(script: JobScript, dir: string = join(dirname(nativeDir()), "jobs")): string {
  const key = join(dir, script);
  const hit = built.get(key);
  if (hit !== undefined && existsSync(hit)) return hit;
  const options = buildOptions(script);
  const settings = settingsOf(options);
  const kept = keptScript(script, dir, settings);
  if (kept !== null) {
    built.set(key, kept);
    return kept;
  }
  const started = Date.now();
  const result = esbuild().buildSync(options);
  const code = result.outputFiles[0]!.text;
  const name = `${script}-${sha256(code).slice(0, 16)}.cjs`;
  const file = join(dir, name);
  // Kept 0644: a root broker's jobs run as the jail's uid (and get a copy by descriptor anyway).
  if (readKept(file, SCRIPT_BYTES) !== code) writeKept(file, code);
  if (readKept(file, SCRIPT_BYTES) !== code) {
    // A folder this process cannot keep files in, or cannot trust (another user's checkout): built each time.
    const own = privateScript(name, code);
    built.set(key, own);
    return own;
  }
  built.set(key, file);
  const inputs = recipeInputs(Object.keys(result.metafile.inputs), options.absWorkingDir, started);
  if (inputs !== null) writeKept(recipeFile(script, dir, settings), JSON.stringify({ settings, script: name, inputs }));
  return file;
}

/**
 * Each file the build read, by hash: its modules, and the package.json and tsconfig.json
 * files above them (esbuild reads both: a package's entry, a compiler setting). Null when
 * one is not a file, or changed since the build began: no recipe can vouch for the script.
 */
export function recipeInputs(modules: readonly string[], from: string, started: number): Record<string, string> | null {
  const files = new Set(modules.map((m) => resolve(from, m)));
  const seen = new Set<string>();
  for (const module of [...files]) {
    for (let dir = dirname(module); !seen.has(dir); dir = dirname(dir)) {
      seen.add(dir);
      for (const config of ["package.json", "tsconfig.json"])
        if (existsSync(join(dir, config))) files.add(join(dir, config));
    }
  }
  const inputs: Record<string, string> = {};
  try {
    for (const path of files) {
      const st = statSync(path);
      if (!st.isFile() || st.mtimeMs >= started || st.ctimeMs >= started) return null;
      inputs[path] = sha256(readFileSync(path));
    }
  } catch {
    return null;
  }
  return inputs;
}

let privateDir: string | null = null;
/** A script in this process's own folder (0700, removed at exit), when build/jobs cannot keep it. */
function privateScript(name: string, code: string): string {
  if (privateDir === null) {
    const dir = mkdtempSync(join(tmpdir(), "tether-jobs-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    privateDir = dir;
  }
  const file = join(privateDir, name);
  writeFileSync(file, code, { mode: 0o600 });
  return file;
}
