/**
 * The compiled `tether` command runs from its bundle (dist/cli/, built by
 * scripts/bundle-cli.mjs with `npm run build`): a command loads a handful of
 * files, not the ~500 modules of dist/broker/ and its packages, and the
 * packages only some commands need (undici's chunk, esbuild, TypeScript)
 * only when one does; only the packages it leaves out (native addons,
 * binaries found by path) load from node_modules/. A child Node runs bin/tether.js with a load hook that
 * records every ES module it loads.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
