/**
 * The type check of an extension: `deno check` on its entry, with
 * `@tether/ext` and `@tether/cap` mapped to the SDK as the bundler maps them,
 * its own `node_modules/` and the SDK's packages resolved as Node would, and
 * nothing fetched (`--no-remote`, no lock file written). It runs none of the
 * sources; it reads them, on the host. It is run only on a folder whose bundle
 * passed, so every import the bundle follows is confined to the folder; what
 * the bundle drops unread (`import type`, `/// <reference path>`) deno check
 * still reads wherever it points — to show in its own error messages, on the
 * checker's terminal — and a timeout bounds a read that never ends (a FIFO).
 * Each error comes back with its file and line in the folder.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { runtimeRoot, SDK_ALIASES } from "./bundle.js";
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

export interface TypeCheckOptions {
  /** The Deno binary. */
  readonly deno: string;
  /** Deno's cache (DENO_DIR): kept between checks it makes them faster; default a throwaway one. */
  readonly cacheDir?: string;
  /** Default 120 s. */
  readonly timeoutMs?: number;
}

const AT = /^\s+at (file:\/\/\S+?):(\d+):(\d+)$/;
const ERROR = /^(TS\d+) \[ERROR\]: (.*)$/;

/** Type-checks `dir`'s entry. */
export async function typeCheck(dir: string, manifest: Manifest, options: TypeCheckOptions): Promise<TypeCheck> {
  const started = performance.now();
  const root = realpathSync(dir);
  const sdk = runtimeRoot();
  const work = mkdtempSync(join(tmpdir(), "tether-type-check-"));
  try {
    const imports = Object.fromEntries(Object.entries(SDK_ALIASES).map(([name, path]) => [name, join(sdk, path)]));
    // The SDK imports its own files as `./x.js` (Node-style ESM): sloppy imports read them as the `.ts` they are.
    writeFileSync(join(work, "deno.json"), JSON.stringify({ nodeModulesDir: "manual", unstable: ["sloppy-imports"], imports }));
    const cache = options.cacheDir ?? join(work, "deno-dir");
    mkdirSync(cache, { recursive: true });
    const args = ["check", "--config", join(work, "deno.json"), "--no-remote", "--no-lock", "--quiet", join(root, manifest.entry)];
    const env = { HOME: work, DENO_DIR: cache, NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1", DENO_NO_PROMPT: "1" };
    const timeoutMs = options.timeoutMs ?? 120_000;
    const run = await new Promise<{ code: number; output: string; timedOut: boolean }>((done) => {
      execFile(options.deno, args, { cwd: work, env, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 16 * 2 ** 20 }, (err, stdout, stderr) => {
        const timedOut = err !== null && (err as { killed?: boolean }).killed === true;
        done({ code: err === null ? 0 : typeof err.code === "number" ? err.code : -1, output: `${stdout}${stderr}`, timedOut });
      });
    });
    const ms = Math.round(performance.now() - started);
    if (run.timedOut) return { ok: false, errors: [], other: [`the type check did not finish within ${timeoutMs / 1000} s`], ms };
    const { errors, other } = parseOutput(run.output, root, sdk);
    if (run.code !== 0 && errors.length === 0 && other.length === 0) other.push(`deno check failed (exit ${run.code}): ${run.output.trim().slice(-2000)}`);
    return { ok: run.code === 0, errors, other, ms };
  } finally {
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
      errors.push({ file: shown(at[1]!, root, sdk), line: Number(at[2]), column: Number(at[3]), code: open.code, message: places(open.message) });
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
