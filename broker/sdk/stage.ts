/**
 * Lays out the author SDK as the npm packages `@tether/ext` and `@tether/cap`,
 * built from jail-runtime/ (the one source: the broker bundles the same files
 * into every artifact). `@tether/ext` holds the whole runtime, compiled to
 * JavaScript with declarations, under lib/; beside it, under broker/, the
 * broker's egress matcher the test kit judges `net.fetch` with (the same
 * relative path as in the checkout, so the kit imports the broker's own
 * modules); and its dependencies vendored as bundled dependencies (so the
 * tarball installs offline). `@tether/cap` re-exports its `./cap`, so there is
 * one copy of the runtime and the test kit can stand in for the broker.
 * Package metadata lives in packages/ext and packages/cap.
 */
import { cpSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { WIRE_VERSION } from "../../jail-runtime/wire/version.js";

const HERE = dirname(fileURLToPath(import.meta.url));

/** The checkout: the folder holding jail-runtime/ and packages/ (from broker/sdk, or dist/broker/sdk). */
function repoRoot(): string {
  for (const candidate of [resolve(HERE, "../.."), resolve(HERE, "../../..")]) {
    try {
      realpathSync(join(candidate, "packages", "ext", "package.json"));
      return realpathSync(candidate);
    } catch {
      // try the next
    }
  }
  throw new Error("Cannot find packages/ext (the SDK's package metadata) beside the broker");
}

/** The entry modules of `@tether/ext`, relative to jail-runtime/ (its `exports`). */
const ENTRIES = ["ext/mod", "ext/testing/mod", "cap/mod"];

interface PackageJson {
  readonly name: string;
  readonly version: string;
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly tether?: { readonly wire?: number };
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, "utf8")) as T;
}

/** A dependency's version as the checkout has it: the broker's pin, else the installed package's. */
function checkoutVersion(repo: string, name: string): string | undefined {
  const pinned = readJson<PackageJson>(join(repo, "package.json")).dependencies?.[name];
  if (pinned !== undefined) return pinned;
  try {
    return readJson<PackageJson>(join(repo, "node_modules", name, "package.json")).version;
  } catch {
    return undefined;
  }
}

/**
 * The two packages' metadata, checked: the major version is the wire version,
 * both packages carry one version, and each vendored dependency is the broker's.
 */
export function sdkPackages(repo = repoRoot()): { ext: PackageJson; cap: PackageJson } {
  const ext = readJson<PackageJson>(join(repo, "packages", "ext", "package.json"));
  const cap = readJson<PackageJson>(join(repo, "packages", "cap", "package.json"));
  const problems: string[] = [];
  for (const pkg of [ext, cap]) {
    if (Number(pkg.version.split(".")[0]) !== WIRE_VERSION)
      problems.push(`${pkg.name} ${pkg.version}: the major version must be the wire version, ${WIRE_VERSION}`);
    if (pkg.tether?.wire !== WIRE_VERSION)
      problems.push(`${pkg.name}: "tether": { "wire": ${WIRE_VERSION} } is missing or stale`);
  }
  if (cap.version !== ext.version || cap.dependencies?.["@tether/ext"] !== ext.version)
    problems.push(`@tether/cap must have @tether/ext's version (${ext.version}) and depend on exactly it`);
  for (const [name, version] of Object.entries(ext.dependencies ?? {})) {
    const broker = checkoutVersion(repo, name);
    if (version !== broker)
      problems.push(`@tether/ext must depend on the broker's ${name} (${broker}), not ${version}`);
  }
  if (ext.dependencies?.valibot === undefined) problems.push("@tether/ext must depend on the broker's valibot");
  if (problems.length > 0) throw new Error(`The SDK's package metadata is inconsistent: ${problems.join("; ")}`);
  return { ext, cap };
}

/**
 * Compiles the SDK's entries (and what they import: the broker's egress
 * matcher too) to JavaScript and declarations, in memory, by their paths in
 * the checkout.
 */
async function compile(repo: string): Promise<Map<string, string>> {
  let ts: typeof import("typescript");
  try {
    ts = (await import("typescript")).default;
  } catch {
    throw new Error("Building the SDK packages needs the 'typescript' package: run 'npm ci' in the Tether checkout");
  }
  const runtime = join(repo, "jail-runtime");
  const options: import("typescript").CompilerOptions = {
    rootDir: repo,
    outDir: "/sdk-lib",
    declaration: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
    types: [],
    strict: true,
    skipLibCheck: true,
    noEmitOnError: true,
    newLine: ts.NewLineKind.LineFeed,
  };
  const roots = [...ENTRIES.map((e) => join(runtime, `${e}.ts`)), join(runtime, "cap", "deno.d.ts")];
  const program = ts.createProgram(roots, options);
  const out = new Map<string, string>();
  const result = program.emit(undefined, (file, text) => out.set(relative("/sdk-lib", file), text));
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...result.diagnostics];
  if (diagnostics.length > 0 || result.emitSkipped) {
    const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => repo, getNewLine: () => "\n" };
    throw new Error(`The SDK does not compile: ${ts.formatDiagnostics(diagnostics, host)}`);
  }
  return out;
}

/**
 * The emitted files the entries reach: the JavaScript they load and the
 * declarations their types name, each graph followed on its own (a type-only
 * import never pulls in JavaScript, nor msgpackr behind the broker's codec).
 */
function reachable(emitted: ReadonlyMap<string, string>): string[] {
  const seen = new Set<string>();
  for (const suffix of [".js", ".d.ts"]) {
    const pending = ENTRIES.map((e) => `jail-runtime/${e}${suffix}`);
    for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
      const text = emitted.get(file);
      if (text === undefined || seen.has(file)) continue;
      seen.add(file);
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)\.js["']/g))
        pending.push(`${join(dirname(file), m[1]!)}${suffix}`);
    }
  }
  return [...seen].sort();
}

/**
 * Writes `@tether/ext` to `<dest>/ext` and `@tether/cap` to `<dest>/cap`,
 * each a folder `npm pack` packs as it is (or, under `node_modules/@tether`,
 * the layout `npm install` of the two tarballs leaves).
 */
export async function stageSdk(dest: string): Promise<{ ext: string; cap: string }> {
  const repo = repoRoot();
  const { ext: metadata } = sdkPackages(repo);
  const emitted = await compile(repo);
  const ext = join(dest, "ext");
  const cap = join(dest, "cap");
  for (const file of reachable(emitted)) {
    if (!file.startsWith("jail-runtime/") && !file.startsWith("broker/egress/"))
      throw new Error(`The SDK reaches ${file}: only jail-runtime/ and the broker's egress matcher may ship in it`);
    const path = join(ext, file.replace(/^jail-runtime\//, "lib/"));
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, emitted.get(file)!);
  }
  for (const name of ["package.json", "README.md"]) cpSync(join(repo, "packages", "ext", name), join(ext, name));
  cpSync(join(repo, "manifests", "schema.json"), join(ext, "manifest.schema.json"));
  // Vendored: `bundleDependencies` packs them into the tarball, so installing needs no registry.
  for (const name of Object.keys(metadata.dependencies ?? {}))
    cpSync(realpathSync(join(repo, "node_modules", name)), join(ext, "node_modules", name), {
      recursive: true,
      dereference: true,
    });
  mkdirSync(cap, { recursive: true });
  for (const name of ["package.json", "README.md", "index.js", "index.d.ts"])
    cpSync(join(repo, "packages", "cap", name), join(cap, name));
  return { ext, cap };
}
