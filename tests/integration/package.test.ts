/**
 * The broker as an installable package: `npm pack` (its prepack builds dist/, unless `make test` just did),
 * then `npm install -g` of the tarball into an empty prefix, from npm's cache
 * (`--prefer-offline`: the registry only for what the cache lacks), and the
 * installed `tether` — compiled JavaScript, no tsx — runs `doctor`, `install`,
 * `approve`, `call` and `mcp` (driven by the MCP SDK's client) on a fresh home.
 * The tests run in order: the second serves what the first installed.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { execa } from "execa";
import { REPO } from "../support/satellites.js";

/** tsc for the prepack, and npm building better-sqlite3 from source if the local prebuild below does not fit. */
const SLOW = 600_000;
/** The dependencies whose install scripts must run (npm 11 asks): the same list as package.json's allowScripts. */
const SCRIPTS = "better-sqlite3,deno,esbuild,msgpackr-extract";

let root: string;
let tether: string;

/**
 * better-sqlite3's addon as this checkout built it, offered to its install script (prebuild-install) as a local
 * prebuild under the name it looks for: no network here reaches its prebuilt binaries, and compiling SQLite
 * again was ~100 s of this file's ~115. A different version or ABI finds no file and is compiled as before.
 */
async function localSqlitePrebuild(dir: string): Promise<Record<string, string>> {
  const pkg = join(REPO, "node_modules", "better-sqlite3");
  const { version } = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as { version: string };
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  mkdirSync(dir);
  await execa("tar", ["-czf", join(dir, name), "-C", pkg, "build/Release/better_sqlite3.node"]);
  return { npm_config_better_sqlite3_local_prebuilds: dir };
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "tether-package-"));
  const prebuilds = await localSqlitePrebuild(join(root, "prebuilds"));
  // Under `make test` (TETHER_FROM_DIST=1) dist/ was just built, and other test files are running `tether`
  // from it: the prepack's rebuild would rewrite it under them, so it is skipped. Alone, the prepack builds.
  const fresh = process.env["TETHER_FROM_DIST"] === "1";
  const packed = await execa("npm", ["pack", "--pack-destination", root, ...(fresh ? ["--ignore-scripts"] : [])], {
    cwd: REPO,
    reject: false,
  });
  expect(packed.exitCode).toBe(0);
  const tarball = readdirSync(root).find((f) => f.endsWith(".tgz"));
  expect(tarball).toBeDefined();
  const prefix = join(root, "prefix");
  const installed = await execa(
    "npm",
    [
      "install",
      "--global",
      "--prefix",
      prefix,
      join(root, tarball!),
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      `--allow-scripts=${SCRIPTS}`,
    ],
    { cwd: root, reject: false, env: prebuilds },
  );
  expect({ code: installed.exitCode, stderr: installed.exitCode === 0 ? "" : installed.stderr }).toEqual({
    code: 0,
    stderr: "",
  });
  tether = join(prefix, "bin", "tether");
}, SLOW);

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The installed command, with this environment's jail settings and nothing from the checkout. */
function run(...args: string[]) {
  return execa(tether, args, { cwd: root, reject: false, env: { TETHER_LOG: "error" } });
}

test(
  "the installed tether runs from its compiled JavaScript: doctor, install, approve, call",
  async () => {
    const pkg = join(root, "prefix", "lib", "node_modules", "tether");
    expect(existsSync(join(pkg, "dist", "broker", "cli", "main.js"))).toBe(true);
    // The command's bundle (scripts/bundle-cli.mjs), which bin/tether.js runs.
    expect(existsSync(join(pkg, "dist", "cli", "main.js"))).toBe(true);
    // What makes bin/tether.js pick the compiled code: no checkout around it.
    expect(existsSync(join(pkg, "tsconfig.json"))).toBe(false);
    expect(existsSync(join(pkg, "node_modules", "tsx"))).toBe(false);
    const home = join(root, "home");
    const doctor = await run("doctor", "--home", home);
    expect({ code: doctor.exitCode, out: doctor.stdout }).toEqual({
      code: 0,
      out: expect.stringContaining("ok   store:"),
    });
    const installed = await run("install", "--home", home, join(REPO, "manifests", "echo"));
    expect(installed.exitCode).toBe(0);
    expect((await run("approve", "--home", home, "echo", "--yes")).exitCode).toBe(0);
    const called = await run("call", "--home", home, "echo", "echo", '{"text":"from the package"}');
    expect({ code: called.exitCode, out: called.stdout }).toEqual({ code: 0, out: "from the package" });
    expect((await run("--version")).stdout).toMatch(/^tether \d+\.\d+\.\d+/);
  },
  SLOW,
);

test(
  "the installed tether mcp serves the session's tools to the MCP SDK's client",
  async () => {
    const home = join(root, "home");
    const client = new Client({ name: "package-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: tether,
        args: ["mcp", "--session", "pkg", "--home", home],
        env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", TETHER_LOG: "error" },
        stderr: "ignore",
      }),
    );
    try {
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(["count", "echo"]);
      const result = await client.callTool({ name: "echo", arguments: { text: "over MCP" } });
      expect(result.content).toEqual([{ type: "text", text: "over MCP" }]);
    } finally {
      await client.close();
    }
  },
  SLOW,
);
