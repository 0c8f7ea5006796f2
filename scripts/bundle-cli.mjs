// After `tsc`: the `tether` command's compiled modules and the packages they import, bundled
// by esbuild into dist/cli/ — one file to start from and one chunk per lazily imported
// command. Node loads ~500 ESM modules for `tether list` from dist/broker/ (drizzle-orm 113,
// execa 106); resolving, reading and linking each is most of a command's start.
//
// Every output sits in dist/cli/ itself (no chunk folder), so a module's `import.meta.url`
// can be rewritten to its own compiled file's URL relative to the output: the files it
// finds beside it (native programs, migrations, the SDK, job entries) are found as before.
// Packages with native parts or binaries found by path stay outside, loaded from node_modules.
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const OUT = resolve("dist/cli");
const OWN = resolve("dist/broker");
/** Loaded from node_modules as before: native addons, packages that find their binary by path, optional ones. */
export const EXTERNAL = ["better-sqlite3", "esbuild", "deno", "pg-native", "typescript", "playwright-core"];

/** `import.meta.url` as an expression; not inside a string (job-scripts.js names it for esbuild's define). */
const META_URL = /(?<![\w."'`])import\.meta\.url(?![\w"'`])/g;

const ownUrls = {
  name: "own-import-meta-url",
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      if (!args.path.startsWith(`${OWN}/`)) return undefined;
      const text = await readFile(args.path, "utf8");
      if (text.search(META_URL) === -1) return { contents: text, loader: "js" };
      const own = JSON.stringify(relative(OUT, args.path));
      return {
        contents: text.replace(META_URL, `new URL(${own}, import.meta.url).href`),
        loader: "js",
        resolveDir: dirname(args.path),
      };
    });
  },
};

/**
 * Builds dist/cli/ from dist/broker/ (tsc first). A `tether` may start from it meanwhile (a developer's,
 * a test's): it finds every file whole. Chunks are named by their content's hash, so this build's are new
 * files; each is written under a temporary name and renamed, the entry (main.js) last; then last build's
 * chunks are removed — a process still running the last build may not find one it imports lazily after that.
 */
export async function bundleCli() {
  const result = await build({
    entryPoints: { main: "dist/broker/cli/main.js" },
    outdir: OUT,
    write: false,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    chunkNames: "[name]-[hash]",
    external: EXTERNAL,
    // CommonJS packages inside an ESM bundle still call require() for Node's own modules.
    banner: {
      js: 'import { createRequire as __tetherRequire } from "node:module";\nconst require = __tetherRequire(import.meta.url);',
    },
    legalComments: "none",
    logLevel: "warning",
    plugins: [ownUrls],
  });
  mkdirSync(OUT, { recursive: true });
  const entry = join(OUT, "main.js");
  const files = [...result.outputFiles].sort((a, b) => Number(a.path === entry) - Number(b.path === entry));
  for (const file of files) {
    const scratch = `${file.path}.${process.pid}.tmp`;
    writeFileSync(scratch, file.contents);
    renameSync(scratch, file.path);
  }
  const built = new Set(files.map((file) => basename(file.path)));
  for (const name of readdirSync(OUT)) if (!built.has(name)) rmSync(join(OUT, name), { force: true });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href)
  await bundleCli();
