/**
 * The scripts host-side jobs run inside the jail (host-job.ts): the broker's
 * own sources (never an extension's), bundled by esbuild into one CommonJS
 * file each with every package they import, so the jail gets one file to
 * run and no `node_modules/` to see. Built once per source hash into
 * build/jobs/ beside the native programs (written to a temporary name and
 * renamed into place, as they are).
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
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

const built = new Map<JobScript, string>();

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

/** The job's script, built when this source was never built here; `dir` defaults to build/ beside build/native. */
export function jobScript(script: JobScript, dir: string = join(dirname(nativeDir()), "jobs")): string {
  const hit = built.get(script);
  if (hit !== undefined && existsSync(hit)) return hit;
  const result = esbuild().buildSync({
    entryPoints: [entryOf(script)],
    bundle: true,
    write: false,
    format: "cjs",
    platform: "node",
    target: "node20",
    logLevel: "silent",
    legalComments: "none",
    // esbuild's own API says a bundled copy should be told where its binary is: ESBUILD_BINARY_PATH, set by the job.
    define: { "import.meta.url": "__tether_job_url" },
    banner: { js: 'const __tether_job_url = require("node:url").pathToFileURL(__filename).href;' },
  });
  const code = result.outputFiles[0]!.contents;
  const hash = createHash("sha256").update(code).digest("hex").slice(0, 16);
  const file = join(dir, `${script}-${hash}.cjs`);
  if (!existsSync(file)) {
    // Readable by the jail's unprivileged uid too: a root broker's
    // jobs run as it (and get a copy by descriptor anyway).
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    const scratch = `${file}.${process.pid}.tmp`;
    writeFileSync(scratch, code, { mode: 0o644 });
    renameSync(scratch, file);
  }
  built.set(script, file);
  return file;
}
