/**
 * Bundles an extension folder into one artifact with esbuild. Only files inside
 * the folder and the SDK resolve; any other import is an install error naming it.
 */
import { createHash } from "node:crypto";
import { readFileSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { BrokerCode, TetherError } from "../errors.js";
import type { Manifest } from "./manifest.js";

const HERE = dirname(fileURLToPath(import.meta.url));
/** The SDK sources: jail-runtime/ beside broker/ (also from dist/, where broker is compiled). */
function runtimeRoot(): string {
  for (const candidate of [resolve(HERE, "../../jail-runtime"), resolve(HERE, "../../../jail-runtime")]) {
    try {
      return realpathSync(candidate);
    } catch {
      // try the next
    }
  }
  throw new TetherError(BrokerCode.installFailed, "Cannot find jail-runtime/ (the author SDK) beside the broker");
}

const SDK_ALIASES: Record<string, string> = { "@tether/ext": "ext/mod.ts", "@tether/cap": "cap/mod.ts" };

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** How every artifact is built: one ESM file for Deno, nothing written to disk by esbuild. */
export const ARTIFACT_BUILD_OPTIONS = {
  bundle: true,
  write: false,
  format: "esm",
  platform: "neutral",
  target: "es2022",
  mainFields: ["module", "main"],
  conditions: ["deno", "import", "default"],
  logLevel: "silent",
  legalComments: "none",
} as const satisfies esbuild.BuildOptions;

export interface Artifact {
  readonly code: string;
  readonly sha256: string;
}

/** The generated entry: pairs each hook the manifest declares with the module's hook of that name. */
function generatedEntry(entryPath: string, manifest: Manifest): string {
  const declared = JSON.stringify(manifest.hook.map((h) => h.event));
  return [
    `import * as m from ${JSON.stringify(entryPath)};`,
    `import { serving } from "@tether/ext";`,
    `const hooks = m.hooks ?? {};`,
    `const declared = ${declared};`,
    `const rows = declared.filter((e) => Object.hasOwn(hooks, e)).map((e) => [e, hooks[e]]);`,
    `for (const e of Object.keys(hooks)) if (!declared.includes(e)) rows.push([e, hooks[e]]);`,
    `await serving({ tools: m.tools ?? {}, commands: m.commands ?? {}, hooks: rows });`,
    ``,
  ].join("\n");
}

/** Bundles `dir` (whose manifest is `manifest`) into one ESM artifact for Deno. */
export async function bundleExtension(dir: string, manifest: Manifest): Promise<Artifact> {
  const root = realpathSync(dir);
  const sdk = runtimeRoot();
  const entryPath = resolve(root, manifest.entry);
  if (!inside(root, entryPath)) throw new TetherError(BrokerCode.installFailed, `entry '${manifest.entry}' is outside the extension folder`);

  const guard: esbuild.Plugin = {
    name: "tether-confine",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === "entry-point") return undefined;
        const alias = SDK_ALIASES[args.path];
        if (alias !== undefined) return { path: join(sdk, alias) };
        const importer = args.importer;
        // The SDK's own imports (its sources and its vendored dependencies) resolve normally.
        if (importer.startsWith(sdk + sep) || importer.includes(`${sep}node_modules${sep}`)) return undefined;
        if (importer === "<stdin>" && args.path === entryPath) return { path: entryPath };
        const where = importer === "<stdin>" ? "the generated entry" : relative(root, importer);
        if (!args.path.startsWith("./") && !args.path.startsWith("../") && !args.path.startsWith("/")) {
          return { errors: [{ text: `import '${args.path}' in ${where} is not allowed: an extension may import only files in its own folder and '@tether/ext' or '@tether/cap'` }] };
        }
        const target = resolve(args.resolveDir, args.path);
        let real: string;
        try {
          real = realpathSync(target);
        } catch {
          // Let esbuild try its extension rewriting (./a.js → ./a.ts), then check again in onLoad.
          real = target;
        }
        if (!inside(root, real)) {
          return { errors: [{ text: `import '${args.path}' in ${where} reaches outside the extension folder` }] };
        }
        return undefined;
      });
      build.onLoad({ filter: /.*/ }, (args) => {
        let real: string;
        try {
          real = realpathSync(args.path);
        } catch {
          return undefined;
        }
        if (!inside(root, real) && !inside(sdk, real) && !real.includes(`${sep}node_modules${sep}`)) {
          return { errors: [{ text: `file '${args.path}' is outside the extension folder` }] };
        }
        return undefined;
      });
    },
  };

  let result: esbuild.BuildResult<{ write: false }>;
  try {
    result = await esbuild.build({
      stdin: { contents: generatedEntry(entryPath, manifest), resolveDir: root, sourcefile: "tether-entry.js", loader: "js" },
      ...ARTIFACT_BUILD_OPTIONS,
      nodePaths: [],
      plugins: [guard],
      absWorkingDir: root,
    });
  } catch (err) {
    const failure = err as esbuild.BuildFailure;
    const messages = (failure.errors ?? []).map((e) => `${e.location ? `${e.location.file}:${e.location.line}: ` : ""}${e.text}`);
    throw new TetherError(BrokerCode.installFailed, `Cannot bundle '${manifest.name}': ${messages.join("; ") || (err as Error).message}`);
  }
  const file = result.outputFiles[0];
  if (file === undefined) throw new TetherError(BrokerCode.installFailed, `Bundling '${manifest.name}' produced no output`);
  const code = file.text;
  return { code, sha256: createHash("sha256").update(code).digest("hex") };
}

/** Reads a previously written artifact and checks its hash. */
export function readArtifact(path: string, sha256: string): string {
  const code = readFileSync(path, "utf8");
  const actual = createHash("sha256").update(code).digest("hex");
  if (actual !== sha256) throw new TetherError(BrokerCode.installFailed, `Artifact ${path} does not match its recorded hash`);
  return code;
}
