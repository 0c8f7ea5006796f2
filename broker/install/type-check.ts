/**
 * The type check of an extension: `deno check` on its entry, with
 * `@tether/ext` and `@tether/cap` mapped to the SDK as the bundler maps them,
 * its own `node_modules/` and the SDK's packages resolved as Node would, and
 * nothing fetched (`--no-remote`, no lock file written). It runs none of the
 * sources, but it reads whatever they name — `/// <reference path>`, `import
 * type`, `@ts-types`, a `types` field — which the bundle never follows; so it
 * runs in a host-side jail (jail/host-job.ts) that shows the folder's
 * snapshot at the folder's real path and the SDK and its packages at theirs,
 * read-only, and nothing else of the host: a host file named by any of those
 * forms does not exist there. Deno's cache lives and dies on the jail's
 * bounded /tmp. Each error comes back with its file and line in the folder.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { jobFailure, placed, runHostJob, type HostJob, type HostJobSetup } from "../jail/host-job.js";
import { resolveSandbox } from "../jail/sandbox.js";
import { folderBinds, runtimeRoot, SDK_ALIASES } from "./bundle.js";
import { snapshotFolder, type FolderSnapshot } from "./folder-snapshot.js";
import type { Manifest } from "./manifest.js";

export interface TypeProblem {
  /** The file in the extension folder (or the SDK's, named so), line and column, 1-based. */
  readonly file: string;
  readonly line: number;
  readonly column: number;
  /** TypeScript's code, e.g. TS2322. */
  readonly code: string;
  readonly message: string;
}

export interface TypeCheck {
  readonly ok: boolean;
  readonly errors: readonly TypeProblem[];
  /** Failures that are not type errors (a module that cannot be found, the check not finishing), each one line. */
  readonly other: readonly string[];
  readonly ms: number;
}

export interface TypeCheckOptions extends HostJobSetup {
  /** Default 120 s. */
  readonly timeoutMs?: number;
}

/**
 * What the type checker may take: memory (TypeScript's compiler
 * with the SDK's types loaded), and its /tmp (Deno's cache).
 */
export const TYPE_CHECK_MEMORY_BYTES = 1024 * 2 ** 20;
const TYPE_CHECK_TMP_BYTES = 128 * 2 ** 20;
/** The most of its report that is read. */
const REPORT_BYTES = 16 * 2 ** 20;
const JAIL_CONFIG = "/opt/tether/deno.json";

const AT = /^\s+at (file:\/\/\S+?):(\d+):(\d+)$/;
const ERROR = /^(TS\d+) \[ERROR\]: (.*)$/;

/**
 * The deno.json a check of code against the SDK's sources uses, `imports` mapping its names to them.
 * The SDK imports its own files as `./x.js` (Node-style ESM): sloppy imports read them as the `.ts` they
 * are. skipLibCheck: declaration files are read and used but not checked themselves — valibot's 600 KB of
 * them were half of every check's time (5.0 → 2.7 s for manifests/echo here); the author's code is checked
 * as before.
 */
export function sdkCheckConfig(imports: Readonly<Record<string, string>>): object {
  return { nodeModulesDir: "manual", unstable: ["sloppy-imports"], compilerOptions: { skipLibCheck: true }, imports };
}

/**
 * The type-check jail over `snapshot` of the folder at `root`:
 * Deno checking `entry` with the config at `config` (a host file).
 */
export function typeCheckJob(
  root: string,
  snapshot: FolderSnapshot,
  config: string,
  entry: string,
  setup: HostJobSetup,
): HostJob {
  const sandbox = resolveSandbox(setup.sandbox);
  const configFile = { host: config, jail: JAIL_CONFIG };
  return {
    label: "type check",
    runtime: "deno",
    args: ["check", "--config", placed(sandbox, configFile), "--no-remote", "--no-lock", "--quiet", entry],
    binds: sandbox === "bwrap" ? folderBinds(root, snapshot) : [],
    files: [configFile],
    // An operator's step, not an extension's call: it may use the machine's CPUs.
    cpus: availableParallelism(),
    memoryBytes: TYPE_CHECK_MEMORY_BYTES,
    tmpBytes: TYPE_CHECK_TMP_BYTES,
    env: { DENO_NO_UPDATE_CHECK: "1", DENO_NO_PROMPT: "1" },
    jail: setup.jail ?? {},
    sandbox,
  };
}

/** Type-checks `dir`'s entry, in the type-check jail. */
export async function typeCheck(dir: string, manifest: Manifest, options: TypeCheckOptions = {}): Promise<TypeCheck> {
  const started = performance.now();
  const root = realpathSync(dir);
  const sdk = runtimeRoot();
  const snapshot = snapshotFolder(root, options.jail?.identity);
  const work = mkdtempSync(join(tmpdir(), "tether-type-check-"));
  try {
    const imports = Object.fromEntries(Object.entries(SDK_ALIASES).map(([name, path]) => [name, join(sdk, path)]));
    const config = { host: join(work, "deno.json") };
    writeFileSync(config.host, JSON.stringify(sdkCheckConfig(imports)));
    const timeoutMs = options.timeoutMs ?? 120_000;
    const job = typeCheckJob(root, snapshot, config.host, join(root, manifest.entry), options);
    const run = await runHostJob(job, "", timeoutMs, REPORT_BYTES);
    const ms = Math.round(performance.now() - started);
    if (run.timedOut || run.overflowed || run.oomKilled)
      return { ok: false, errors: [], other: [jobFailure(job, run, timeoutMs)], ms };
    const output = `${run.stdout.toString("utf8")}${run.stderr}`;
    const { errors, other } = parseOutput(output, root, sdk);
    if (run.exitCode !== 0 && errors.length === 0 && other.length === 0)
      other.push(`deno check failed (${run.signal ?? `exit ${run.exitCode}`}): ${output.trim().slice(-2000)}`);
    return { ok: run.exitCode === 0, errors, other, ms };
  } finally {
    snapshot.remove();
    rmSync(work, { recursive: true, force: true });
  }
}

/** A file URL as the author knows it: its path in the folder, else the SDK's, else as is. */
function shown(url: string, root: string, sdk: string): string {
  let path: string;
  try {
    path = fileURLToPath(url);
  } catch {
    return url;
  }
  const inside = (base: string) => {
    const rel = relative(base, path);
    return rel.startsWith("..") || isAbsolute(rel) ? null : rel;
  };
  const own = inside(root);
  if (own !== null) return own;
  const theirs = inside(sdk);
  return theirs !== null ? `the SDK's ${theirs}` : path;
}

/** Reads `deno check`'s report: each `TSnnnn [ERROR]: message` with the first `at file:line:col` after it. */
export function parseOutput(output: string, root: string, sdk: string): { errors: TypeProblem[]; other: string[] } {
  const errors: TypeProblem[] = [];
  const other: string[] = [];
  let open: { code: string; message: string } | null = null;
  let otherOpen = false;
  // Each file URL in a message, as the author knows the file (its :line:col kept).
  const places = (text: string) =>
    text.replace(/file:\/\/[^\s"'`]+/g, (url) => {
      const lineCol = /(:\d+){1,2}$/.exec(url)?.[0] ?? "";
      return shown(url.slice(0, url.length - lineCol.length), root, sdk) + lineCol;
    });
  for (const line of output.split("\n")) {
    const started = ERROR.exec(line);
    if (started !== null) {
      open = { code: started[1]!, message: started[2]! };
      continue;
    }
    const at = AT.exec(line);
    if (at !== null && open !== null) {
      errors.push({
        file: shown(at[1]!, root, sdk),
        line: Number(at[2]),
        column: Number(at[3]),
        code: open.code,
        message: places(open.message),
      });
      open = null;
      continue;
    }
    if (at !== null && otherOpen) {
      // Where the failure above was found ("Module not found … at index.ts:2:24").
      other[other.length - 1] += ` at ${places(at[0].trim().slice(3))}`;
      otherOpen = false;
      continue;
    }
    const failed = /^error: (.*)$/.exec(line);
    otherOpen = failed !== null && failed[1] !== "Type checking failed.";
    if (otherOpen) other.push(places(failed![1]!));
  }
  return { errors, other };
}
