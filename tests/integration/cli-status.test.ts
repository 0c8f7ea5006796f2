/**
 * `tether status` through the real binary: per extension its approval and what
 * it serves in sessions, each secret it uses (not set, then set — the value
 * never printed), and the daemon scope; `--json` is the same as data.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { REPO } from "../support/satellites.js";

const BIN = join(REPO, "bin", "tether.js");
const SLOW = 240_000;
let root: string;

async function tether(
  args: readonly string[],
  input?: string,
): Promise<{ code: number | undefined; stdout: string; stderr: string }> {
  const result = await execa(process.execPath, [BIN, ...args, "--home", join(root, "home")], {
    cwd: REPO,
    reject: false,
    timeout: 120_000,
    ...(input !== undefined ? { input } : { stdin: "ignore" }),
  });
  return { code: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "tether-status-"));
  cpSync(join(REPO, "tests", "integration", "fixtures", "secret-fetcher"), join(root, "secret-fetcher"), {
    recursive: true,
  });
  expect((await tether(["install", join(REPO, "manifests", "echo")])).code).toBe(0);
  expect((await tether(["install", join(root, "secret-fetcher")])).code).toBe(0);
  expect((await tether(["approve", "echo", "--yes"])).code).toBe(0);
}, SLOW);

afterAll(() => rmSync(root, { recursive: true, force: true }));

test(
  "each extension's approval, what it serves, and its secret not set with the command to run",
  async () => {
    const { code, stdout } = await tether(["status"]);
    expect(code).toBe(0);
    expect(stdout.split("\n")).toEqual([
      "echo            1.0.0    approved  sessions: 2 tools",
      "secret-fetcher  1.0.0    pending   sessions: 1 tool",
      "                secret api_token: NOT SET: tether secret set secret-fetcher api_token",
      "",
      "daemon scope: eligible none; running in this process: none (daemon satellites run in tether serve and the library, booted at a provider's first completion)",
    ]);
  },
  SLOW,
);

test(
  "a secret set shows as set; its value is printed nowhere; --json carries the same",
  async () => {
    const value = `status-${Math.random().toString(36).slice(2)}-value`;
    expect((await tether(["secret", "set", "secret-fetcher", "api_token"], `${value}\n`)).code).toBe(0);
    const shown = await tether(["status"]);
    expect(shown.stdout).toContain("secret api_token: set");
    expect(`${shown.stdout}${shown.stderr}`).not.toContain(value);
    const json = JSON.parse((await tether(["status", "--json"])).stdout) as {
      extensions: { name: string; credentials: { secret: string; state: string }[] }[];
    };
    expect(json.extensions.find((e) => e.name === "secret-fetcher")!.credentials).toEqual([
      { secret: "api_token", state: "set" },
    ]);
  },
  SLOW,
);
