/**
 * The compiled `tether` command runs from its bundle (dist/cli/, built by
 * scripts/bundle-cli.mjs with `npm run build`): a command loads a handful of
 * files, not the ~500 modules of dist/broker/ and its packages, and the
 * packages only some commands need (undici's chunk, esbuild, TypeScript)
 * only when one does; only the packages it leaves out (native addons,
 * binaries found by path) load from node_modules/. A child Node runs bin/tether.js with a load hook that
 * records every ES module it loads. And every lazy import of a CommonJS
 * package the bundle holds reads its exports from `default`, the only name
 * a chunk gives (a source scan: the whole class, not the one found).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { EXTERNAL } from "../../scripts/bundle-cli.mjs";
import { REPO } from "../support/satellites.js";

const run = promisify(execFile);

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tether-cli-bundle-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `tether args` from dist/ and returns what it printed and every ES module URL it loaded. */
async function loaded(...args: string[]): Promise<{ stdout: string; urls: string[] }> {
  const log = join(dir, `loaded-${args[0]}.txt`);
  const hook = `import { appendFileSync } from "node:fs";
export async function load(url, context, next) { appendFileSync(${JSON.stringify(log)}, url + "\\n"); return next(url, context); }`;
  const register = `import { register } from "node:module"; register(${JSON.stringify(
    `data:text/javascript,${encodeURIComponent(hook)}`,
  )});`;
  const { stdout } = await run(
    process.execPath,
    ["--import", `data:text/javascript,${encodeURIComponent(register)}`, join(REPO, "bin", "tether.js"), ...args],
    { cwd: dir, env: { ...process.env, TETHER_FROM_DIST: "1", TETHER_LOG: "error" }, timeout: 60_000 },
  );
  return { stdout, urls: readFileSync(log, "utf8").trim().split("\n") };
}

const CLI = pathToFileURL(join(REPO, "dist", "cli")).href;
const MODULES = pathToFileURL(join(REPO, "node_modules")).href;

test("the bundle is built (npm run build)", () => {
  expect(existsSync(join(REPO, "dist", "cli", "main.js"))).toBe(true);
});

test.each([["list", "--home", "home"], ["--version"]])(
  "tether %s loads the bundle's files and nothing of dist/broker/ or node_modules/",
  async (...args) => {
    const { stdout, urls } = await loaded(...args);
    expect(stdout).toMatch(args[0] === "list" ? /no extensions installed/ : /^tether \d+\.\d+\.\d+/);
    const ours = urls.filter((url) => !url.startsWith("node:") && !url.endsWith("/bin/tether.js"));
    // Packages left out of the bundle (native addons, binaries found by path) load from node_modules/ as before.
    const external = (url: string) => EXTERNAL.some((name) => url.startsWith(`${MODULES}/${name}/`));
    expect(ours.filter((url) => !url.startsWith(`${CLI}/`) && !external(url))).toEqual([]);
    expect(ours).toContain(`${CLI}/main.js`);
    // The chunk holding undici is loaded by a brokered request's first use, not by a command's start.
    expect(ours.filter((url) => /\/undici-[^/]*\.js$/.test(url))).toEqual([]);
    // From dist/broker/, `tether list` loaded ~500 (225 of its own, drizzle-orm 113, execa 106); the bundle ~50.
    expect(ours.length).toBeLessThan(100);
  },
);

/** Every `import("pkg")` of a package in the broker's sources: file, line, package. */
function packageImports(): Array<{ file: string; line: string; pkg: string }> {
  const found: Array<{ file: string; line: string; pkg: string }> = [];
  for (const entry of readdirSync(join(REPO, "broker"), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith(".ts")) continue;
    const file = join(entry.parentPath, entry.name);
    for (const line of readFileSync(file, "utf8").split("\n")) {
      for (const m of line.matchAll(/(?<!typeof )\bimport\("((?:@[^/"]+\/)?[^./"][^/"]*)[^"]*"\)/g)) {
        if (!m[1]!.startsWith("node:")) found.push({ file: relative(REPO, file), line: line.trim(), pkg: m[1]! });
      }
    }
  }
  return found;
}

test("a CommonJS package the bundle holds is read from `default` wherever it is imported lazily", () => {
  // In a chunk of the bundle such a package exports only `default` (Node's own import() also gives its names):
  // reading a name straight off the namespace works from dist/broker/ and fails from dist/cli/.
  const imports = packageImports();
  expect(imports.map((i) => i.pkg)).toContain("undici");
  const unread = imports.filter(({ line, pkg }) => {
    if (EXTERNAL.includes(pkg)) return false;
    const manifest = JSON.parse(readFileSync(join(REPO, "node_modules", pkg, "package.json"), "utf8")) as {
      type?: string;
    };
    return manifest.type !== "module" && !line.includes(".default");
  });
  expect(unread).toEqual([]);
});
