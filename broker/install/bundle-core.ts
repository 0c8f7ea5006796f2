/**
 * Bundles an extension folder into one artifact with esbuild. Every file the
 * bundle reads must really live in the folder (or be the SDK and its packages,
 * reached only through the SDK); any other import is an install error naming it.
 *
 * This runs inside a host-side jail (bundle-job.ts, started by bundle.ts), over
 * a snapshot of the folder bound at the folder's own real path: there the host's
 * other files do not exist, so a link out of the folder dangles. Paths are
 * therefore judged by where their links point (`linkTarget`), whether or not
 * the target exists, and the refusals name the host path the author wrote.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync, type Stats } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type * as esbuild from "esbuild";
import { BrokerCode, TetherError } from "../base/errors.js";
import { scanArtifact } from "./artifact-scan.js";
import { migrationsTrailer, readMigrations } from "./migrations.js";
import { PRELUDE_PATH, PRELUDE_SPECIFIER, generatedEntry } from "./entry.js";
import type { Manifest } from "./manifest.js";
import type { SourceFile } from "./source-file.js";

const HERE = dirname(fileURLToPath(import.meta.url));
/**
 * The SDK's sources: jail-runtime/ beside broker/. From dist/ (an installed
 * package, where broker is compiled) the sources are the package's own
 * jail-runtime/, not dist/jail-runtime (compiled, so not what an extension's
 * bundle imports).
 */
export function runtimeRoot(): string {
  for (const candidate of [resolve(HERE, "../../jail-runtime"), resolve(HERE, "../../../jail-runtime")]) {
    try {
      realpathSync(join(candidate, "ext", "mod.ts"));
      return realpathSync(candidate);
    } catch {
      // try the next
    }
  }
  throw new TetherError(BrokerCode.installFailed, "Cannot find jail-runtime/ (the author SDK) beside the broker");
}

export const SDK_ALIASES: Readonly<Record<string, string>> = {
  "@tether/ext": "ext/mod.ts",
  "@tether/cap": "cap/mod.ts",
};
/** A subpath of the SDK's packages (`@tether/ext/testing`): never the broker's copy, so never bundled. */
const SDK_SUBPATH = /^@tether\/(?:ext|cap)\//;

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
  /** The folder's files it was built from, by path (the SDK's are not listed). */
  readonly sources: readonly SourceFile[];
}

/** The generated entry lives in its own namespace: no file of the folder can pose as it. */
const ENTRY_NAME = "tether-entry.js";
const ENTRY_NAMESPACE = "tether-entry";

/**
 * The real directory of the package a bare import names, found upward from the file it
 * resolved to (the nearest package.json with that name), or undefined.
 */
function packageDirOf(spec: string, real: string): string | undefined {
  const parts = spec.split("/");
  const name = spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
  for (let dir = dirname(real); dirname(dir) !== dir; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown };
      if (pkg.name === name) return dir;
    } catch {
      // no package.json here (or not JSON): keep looking
    }
  }
  return undefined;
}

/**
 * Where `path` leads, its symbolic links followed by their text (at most 40), whether or
 * not the place exists: equal to realpath for a path that exists, and for one that does
 * not (a link to a host file, which the jail does not have) the path the links name.
 */
export function linkTarget(path: string): string {
  const parts = resolve(path)
    .split(sep)
    .filter((p) => p !== "");
  let done = "/";
  let hops = 0;
  while (parts.length > 0) {
    const next = join(done, parts.shift()!);
    let link: string | null = null;
    try {
      if (lstatSync(next).isSymbolicLink()) link = readlinkSync(next);
    } catch {
      // does not exist: the rest is taken as written
      return join(next, ...parts);
    }
    if (link === null) {
      done = next;
      continue;
    }
    if (++hops > 40) return join(next, ...parts);
    parts.unshift(
      ...resolve(done, link)
        .split(sep)
        .filter((p) => p !== ""),
    );
    done = "/";
  }
  return done;
}

/**
 * Files of the folder the snapshot could not copy faithfully, by
 * path in the folder: why each is refused (folder-snapshot.ts).
 */
export type FolderProblems = Readonly<Record<string, string>>;

/** What is wrong with a file the bundle is about to read, or undefined. `own`: it is in the extension folder. */
function fileProblem(st: Stats, own: boolean, recorded?: string): string | undefined {
  if (own && recorded !== undefined) return recorded;
  if (st.isFIFO()) return "is a FIFO, not a regular file; replace it with a regular file in the extension folder";
  if (st.isSocket()) return "is a socket, not a regular file; replace it with a regular file in the extension folder";
  if (st.isCharacterDevice() || st.isBlockDevice())
    return "is a device, not a regular file; replace it with a regular file in the extension folder";
  if (st.isDirectory()) return "is a directory, not a file; import a file inside it instead";
  if (!st.isFile()) return "is not a regular file; replace it with a regular file in the extension folder";
  // A hard link's real path is wherever it was linked from: its contents may be any host file.
  if (own && st.nlink > 1) return `is a hard link (${st.nlink} names); copy the file into the extension folder instead`;
  return undefined;
}

/**
 * esbuild reads every package.json it meets on its own (not through onLoad), and one
 * that is a FIFO would hang the install. Check the folder's package.json files first.
 */
function checkPackageFiles(root: string, problems: FolderProblems): void {
  const pending = [root];
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue; // unreadable: esbuild cannot read it either
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      // symlinked directories are not followed; their targets are checked where they live
      if (entry.isDirectory()) pending.push(path);
      if (entry.name !== "package.json") continue;
      const shown = relative(root, path);
      const real = linkTarget(path);
      if (!inside(root, real))
        throw new TetherError(
          BrokerCode.installFailed,
          `'${shown}' is a symlink to ${real}, outside the extension ` +
            `folder; copy the file into the extension folder instead`,
        );
      let st: Stats;
      try {
        st = statSync(real);
      } catch {
        continue; // dangling: nothing to read
      }
      if (st.isDirectory()) continue; // esbuild skips it
      const problem = fileProblem(st, true, problems[relative(root, real).split(sep).join("/")]);
      if (problem !== undefined) throw new TetherError(BrokerCode.installFailed, `'${shown}' ${problem}`);
    }
  }
}

/** A specifier with a URL scheme (node:, file:, https:, npm:, data:, …): never a file of the folder. */
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
/** Marks our own build.resolve calls, which esbuild's resolver answers. */
const RESOLVING = Symbol("tether-resolving");
/** Marks a file reached through the SDK (an alias or the SDK's own import). */
const SDK_FILE = Symbol("tether-sdk-file");

const ALLOWED =
  "an extension may import only files in its own folder (its " +
  "node_modules/ included) and '@tether/ext' or '@tether/cap'";

/**
 * An SDK file's relative import, resolved here as esbuild resolves the SDK's own
 * spellings — the file as written, else a `.js` spelling's `.ts` — to its real path, when
 * that is a regular file inside the SDK; undefined for anything else (esbuild is asked
 * then). Each of the SDK's ~75 imports of its own files was a round trip to esbuild's
 * service: about a third of a bundle's plugin calls. (esbuild would try `x.js.ts` before
 * `x.ts`; the SDK has no such names, and the oracle test holds every import it makes.
 * The SDK has no package.json of its own, so no `sideEffects` is lost.)
 */
export function sdkRelativeFile(sdk: string, resolveDir: string, spec: string): string | undefined {
  if (!(spec.startsWith("./") || spec.startsWith("../"))) return undefined;
  const written = resolve(resolveDir, spec);
  for (const candidate of written.endsWith(".js") ? [written, `${written.slice(0, -3)}.ts`] : [written]) {
    let real: string;
    try {
      real = realpathSync(candidate);
      if (!statSync(real).isFile()) return undefined;
    } catch {
      continue; // not there: the next spelling
    }
    return inside(sdk, real) ? real : undefined;
  }
  return undefined;
}

/** The plugin that decides, by real path, every file the bundle resolves and reads. */
function confinement(
  root: string,
  sdk: string,
  entryPath: string,
  manifest: Manifest,
  read: Set<string>,
  problems: FolderProblems,
): esbuild.Plugin {
  // The SDK, then the real directory of each package it (or such a package) imports by name.
  const trusted = [sdk];
  const inTrusted = (real: string) => trusted.some((dir) => inside(dir, real));
  const shown = (path: string) =>
    inside(root, path) ? relative(root, path) || "." : inside(sdk, path) ? `the SDK's ${relative(sdk, path)}` : path;
  const refuse = (text: string) => ({ errors: [{ text }] });

  return {
    name: "tether-confine",
    setup(build) {
      const resolveWithEsbuild = (args: esbuild.OnResolveArgs) =>
        build.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          with: args.with,
          pluginData: RESOLVING,
        });

      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === RESOLVING) return undefined;
        if (args.kind === "entry-point")
          return args.path === ENTRY_NAME
            ? { path: ENTRY_NAME, namespace: ENTRY_NAMESPACE }
            : refuse(`entry point '${args.path}' is not the generated entry`);
        const alias = SDK_ALIASES[args.path];
        if (alias !== undefined) return { path: join(sdk, alias), pluginData: SDK_FILE };
        const spec = args.path;
        const fromEntry = args.namespace === ENTRY_NAMESPACE; // no file of the folder can be this importer
        const label = fromEntry ? `entry '${manifest.entry}'` : `import '${spec}' in ${shown(args.importer)}`;
        if (SDK_SUBPATH.test(spec))
          return refuse(
            `${label} is not allowed: an artifact gets the SDK only as '@tether/ext' and '@tether/cap' ` +
              `(the test kit, '@tether/ext/testing', is for test files, which are not bundled)`,
          );
        if (fromEntry && spec === PRELUDE_SPECIFIER) return { path: join(sdk, PRELUDE_PATH), pluginData: SDK_FILE };
        if (fromEntry && spec !== entryPath) return refuse(`${label}: ${ALLOWED}`);
        const importer = fromEntry ? root : linkTarget(args.importer);

        if (!inside(root, importer)) {
          // The SDK and its packages: they may reach each other, nothing else.
          if (!inTrusted(importer)) return refuse(`${label}: the importing file is outside the extension folder`);
          const own = inside(sdk, importer) ? sdkRelativeFile(sdk, args.resolveDir, spec) : undefined;
          if (own !== undefined) return { path: own, pluginData: SDK_FILE };
          const found = SCHEME.test(spec) ? undefined : await resolveWithEsbuild(args);
          let real: string | undefined;
          try {
            if (
              found !== undefined &&
              found.errors.length === 0 &&
              !found.external &&
              found.namespace === "file" &&
              found.path !== ""
            )
              real = realpathSync(found.path);
          } catch {
            // not found: refused below
          }
          const bare = !(spec.startsWith(".") || spec.startsWith("/"));
          const pkg = real !== undefined && bare && !inTrusted(real) ? packageDirOf(spec, real) : undefined;
          if (pkg !== undefined) trusted.push(pkg);
          if (real === undefined || !inTrusted(real))
            return refuse(`${label} reaches outside the SDK and the packages it imports; run 'npm ci'`);
          return { path: real, sideEffects: found?.sideEffects, pluginData: SDK_FILE };
        }

        if (SCHEME.test(spec)) return refuse(`${label} is not allowed: ${ALLOWED}`);
        const bare = !(
          spec === "." ||
          spec === ".." ||
          spec.startsWith("./") ||
          spec.startsWith("../") ||
          spec.startsWith("/")
        );
        if (!bare) {
          // Refuse before esbuild even looks outside the folder (it would read package.json files there).
          const target = resolve(args.resolveDir, spec);
          if (!inside(root, target) || !inside(root, linkTarget(target)))
            return refuse(
              `${label} reaches outside the extension folder; copy the file into the extension folder instead`,
            );
        }
        const found = await resolveWithEsbuild(args);
        if (found.errors.length > 0 || found.external || found.namespace !== "file" || found.path === "") {
          if (bare) {
            // A package whose folder links out of the extension folder (to nothing, in the jail).
            const name = spec
              .split("/")
              .slice(0, spec.startsWith("@") ? 2 : 1)
              .join("/");
            const linked = linkTarget(join(root, "node_modules", name));
            if (!inside(root, linked))
              return refuse(
                `${label} is not allowed: it resolves to ${linked}, outside the extension ` +
                  `folder; vendor the package into the extension's node_modules/ instead`,
              );
            return refuse(`${label} is not allowed: it is not a package in the extension's node_modules/; ${ALLOWED}`);
          }
          return refuse(`${label} cannot be resolved: ${found.errors[0]?.text ?? "it is not a file"}`);
        }
        const real = linkTarget(found.path);
        if (!inside(root, real)) {
          if (bare)
            return refuse(
              `${label} is not allowed: it resolves to ${real}, outside the extension ` +
                `folder; vendor the package into the extension's node_modules/ instead`,
            );
          return refuse(
            `${label} reaches outside the extension folder (to ${real}); ` +
              `copy the file into the extension folder instead`,
          );
        }
        return { path: real, suffix: found.suffix, sideEffects: found.sideEffects };
      });

      // Every file esbuild reads as a module comes through here (glob imports skip onResolve).
      build.onLoad({ filter: /.*/ }, (args) => {
        if (args.namespace === ENTRY_NAMESPACE)
          return { contents: generatedEntry(entryPath, manifest), resolveDir: root, loader: "js" };
        if (args.namespace !== "file")
          return refuse(`module '${args.path}' (namespace ${args.namespace}) is not a file`);
        const real = linkTarget(args.path);
        const own = inside(root, real);
        if (!own && !(args.pluginData === SDK_FILE && inTrusted(real))) {
          return refuse(
            `file '${shown(args.path)}' is outside the extension folder ` +
              `(it is ${real}); copy it into the extension folder instead`,
          );
        }
        let st: Stats;
        try {
          st = statSync(real);
        } catch {
          return refuse(`file '${shown(args.path)}' cannot be read`);
        }
        const problem = fileProblem(st, own, problems[relative(root, real).split(sep).join("/")]);
        if (problem !== undefined) return refuse(`file '${shown(args.path)}' ${problem}`);
        if (own) read.add(real);
        return undefined;
      });
    },
  };
}

/**
 * Bundles the folder at `root` (a real path; whose manifest is `manifest`) into one ESM
 * artifact for Deno, with the SDK at `sdk`. Run in the bundling jail (bundle.ts); in
 * the broker's own process only by tests of the confinement plugin itself.
 */
export async function bundleFolder(
  root: string,
  sdk: string,
  manifest: Manifest,
  problems: FolderProblems = {},
): Promise<Artifact> {
  const entryPath = resolve(root, manifest.entry);
  if (!inside(root, entryPath))
    throw new TetherError(BrokerCode.installFailed, `entry '${manifest.entry}' is outside the extension folder`);
  checkPackageFiles(root, problems);

  const read = new Set<string>();
  let result: esbuild.BuildResult<{ write: false }>;
  try {
    // Imported at the first build, not with this module: the broker loads it, and most commands build nothing.
    result = await (await import("esbuild")).build({
      entryPoints: [ENTRY_NAME],
      ...ARTIFACT_BUILD_OPTIONS,
      nodePaths: [],
      // No tsconfig.json is read: one found above the folder, or `extends`, would read host files.
      tsconfigRaw: "{}",
      plugins: [confinement(root, sdk, entryPath, manifest, read, problems)],
      absWorkingDir: root,
    });
  } catch (err) {
    const failure = err as esbuild.BuildFailure;
    const messages = (failure.errors ?? []).map(
      (e) => `${e.location ? `${e.location.file}:${e.location.line}: ` : ""}${e.text}`,
    );
    throw new TetherError(
      BrokerCode.installFailed,
      `Cannot bundle '${manifest.name}': ${messages.join("; ") || (err as Error).message}`,
    );
  }
  const file = result.outputFiles[0];
  if (file === undefined)
    throw new TetherError(BrokerCode.installFailed, `Bundling '${manifest.name}' produced no output`);
  await scanArtifact(file.text, manifest.name);
  // Migrations ride on the artifact: its last line pins them, so the approved hash covers them (migrations.ts).
  const migrations = readMigrations(root, manifest);
  const code = manifest.storage === undefined ? file.text : file.text + migrationsTrailer(migrations);
  const sources = [...sourcesOf(root, read), ...migrations].sort((a, b) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : 0,
  );
  return { code, sha256: createHash("sha256").update(code).digest("hex"), sources };
}

/** The files read, by path in the folder (checked regular files inside it: read again here for their hashes). */
function sourcesOf(root: string, read: ReadonlySet<string>): SourceFile[] {
  return [...read]
    .map((real) => {
      const content = readFileSync(real);
      return {
        path: relative(root, real).split(sep).join("/"),
        sha256: createHash("sha256").update(content).digest("hex"),
        content,
      };
    })
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Reads a previously written artifact and checks its hash. */
export function readArtifact(path: string, sha256: string): string {
  const code = readFileSync(path, "utf8");
  const actual = createHash("sha256").update(code).digest("hex");
  if (actual !== sha256)
    throw new TetherError(BrokerCode.installFailed, `Artifact ${path} does not match its recorded hash`);
  return code;
}
