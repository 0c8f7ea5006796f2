/**
 * Checks a finished artifact is self-contained. Deno loads every literal import
 * of its main module (static, export-from, a literal `import()`) as part of the
 * static module graph, with no read check; esbuild can leave one in the output
 * (an unresolvable `import()` inside try/catch is left as it is). So esbuild
 * parses the artifact again and every specifier it is asked to resolve is an
 * install error. Not in that graph, so not looked for: `import.meta.resolve`
 * (it reads nothing), computed imports and `new Worker(…)` (Deno checks their
 * reads: docs/jail.md, J03–J10, J61–J65; measured with Deno 2.9.6).
 */
import type * as esbuild from "esbuild";
import { BrokerCode, TetherError } from "../base/errors.js";

/** Nowhere on disk: a glob-style import in the artifact must not make the scan list or read files. */
const NOWHERE = "/nonexistent/tether-artifact-scan";

const KIND: Partial<Record<esbuild.ImportKind, string>> = {
  "import-statement": "an import or export-from of",
  "dynamic-import": "a literal import() of",
  "require-call": "a require() of",
  "require-resolve": "a require.resolve() of",
};

/** Throws an install error naming each import the artifact of `name` still makes. */
export async function scanArtifact(code: string, name: string): Promise<void> {
  const left: string[] = [];
  const recorder: esbuild.Plugin = {
    name: "tether-artifact-scan",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        left.push(`${KIND[args.kind] ?? args.kind} '${args.path}'`);
        return { path: args.path, external: true };
      });
      build.onLoad({ filter: /.*/ }, (args) => {
        left.push(`a load of '${args.path}'`);
        return { contents: "", loader: "empty" };
      });
    },
  };
  try {
    // Imported at the first scan, not with this module (most commands scan nothing).
    await (await import("esbuild")).build({
      stdin: { contents: code, resolveDir: NOWHERE, sourcefile: "artifact.js", loader: "js" },
      bundle: true,
      write: false,
      format: "esm",
      platform: "neutral",
      target: "esnext",
      logLevel: "silent",
      nodePaths: [],
      tsconfigRaw: "{}",
      plugins: [recorder],
    });
  } catch (err) {
    const failure = err as esbuild.BuildFailure;
    const messages = (failure.errors ?? []).map((e) => `${e.location ? `line ${e.location.line}: ` : ""}${e.text}`);
    throw new TetherError(
      BrokerCode.installFailed,
      `Cannot check the artifact of '${name}' is self-contained: ${messages.join("; ") || (err as Error).message}`,
    );
  }
  if (left.length > 0) {
    throw new TetherError(
      BrokerCode.installFailed,
      `The artifact of '${name}' still makes ${left.join(", ")}, which the bundle ` +
        `did not inline (Deno would load it without a read check): remove the import, ` +
        `or put the file in the extension folder and import it by a relative path`,
    );
  }
}
