/**
 * What an operator sees around an install, through the real binary on real
 * homes: a code-only upgrade shows the artifact and the source files that
 * changed (and how, with --diff); re-approving keeps an earlier --only; a
 * different folder under an installed name asks first; unreferenced artifacts
 * are collected; doctor names a wrong policy.toml key; and a rule the policy
 * leaves unreachable is flagged at review with the switch — the refusal it
 * predicts is the one the call then gets.
 */
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { execa } from "execa";
import { REPO } from "../support/satellites.js";

const BIN = join(REPO, "bin", "tether.js");
const SLOW = 180_000;

interface Run {
  readonly code: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

async function tether(home: string, ...args: string[]): Promise<Run> {
  const result = await execa(process.execPath, [BIN, ...args], {
    env: { TETHER_HOME: home },
    cwd: REPO,
    stdin: "ignore",
    reject: false,
    timeout: 120_000,
  });
  return { code: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

function ok(run: Run): Run {
  if (run.code !== 0) throw new Error(`exit ${String(run.code)}:\n${run.stdout}\n--- stderr ---\n${run.stderr}`);
  return run;
}

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "tether-operator-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A copy of manifests/<name> at root/<as>, to edit. */
function copy(name: string, as: string): string {
  const dir = join(root, as);
  cpSync(join(REPO, "manifests", name), dir, { recursive: true });
  return dir;
}

function edit(file: string, from: string | RegExp, to: string): void {
  const text = readFileSync(file, "utf8");
  const next = text.replace(from, to);
  expect(next).not.toBe(text);
  writeFileSync(file, next);
}

/** One column of the installs row of `name`, read as an operator's sqlite3 would. */
function installed(home: string, name: string): { source_dir: string; artifact_path: string; artifact_hash: string } {
  const db = new Database(join(home, "tether.db"), { readonly: true });
  try {
    return db
      .prepare("SELECT source_dir, artifact_path, artifact_hash FROM installs WHERE name = ?")
      .get(name) as never;
  } finally {
    db.close();
  }
}

test(
  "a code-only upgrade: review shows both artifacts' sizes and hashes and the files that differ; --diff shows how; the old artifact is collected",
  async () => {
    const home = join(root, "h-code");
    const src = copy("echo", "echo-code");
    ok(await tether(home, "install", src));
    ok(await tether(home, "approve", "echo", "--yes"));
    const before = installed(home, "echo");
    const beforeBytes = readFileSync(before.artifact_path).length;
    edit(join(src, "index.ts"), "return outcome([text(said)]);", "return outcome([text(shout(said))]);");
    appendFileSync(join(src, "index.ts"), 'import { shout } from "./shout.ts";\n');
    writeFileSync(join(src, "shout.ts"), "export const shout = (s: string): string => s.toUpperCase();\n");
    const upgrade = ok(await tether(home, "install", src));
    const size = (path: string) => readFileSync(path).length;
    const after = installed(home, "echo");
    expect(after.artifact_hash).not.toBe(before.artifact_hash);
    // The replaced artifact is gone, and the install said so.
    expect(upgrade.stderr).toContain(
      `… removed ${before.artifact_path.split("/").at(-1)}: no install refers to it any more`,
    );
    expect(readdirSync(join(home, "artifacts"))).toEqual([after.artifact_path.split("/").at(-1)]);

    const [review, diff, json] = await Promise.all([
      tether(home, "review", "echo"),
      tether(home, "review", "echo", "--diff"),
      tether(home, "review", "echo", "--json"),
    ]);
    expect(ok(review).stdout).toContain("Changed since approval (nothing widened):");
    expect(review.stdout).toContain(
      `  artifact: ${beforeBytes} bytes (sha256 ${before.artifact_hash.slice(0, 16)}…) → ${size(after.artifact_path)} bytes (sha256 ${after.artifact_hash.slice(0, 16)}…)`,
    );
    expect(review.stdout).toContain(
      "  files that differ: index.ts (changed), shout.ts (added)\n  to see how: tether review echo --diff",
    );
    expect(ok(diff).stdout).toContain("--- a/index.ts\n+++ b/index.ts\n");
    expect(diff.stdout).toContain("-    return outcome([text(said)]);\n+    return outcome([text(shout(said))]);");
    expect(diff.stdout).toContain(
      "--- /dev/null\n+++ b/shout.ts\n@@ -0,0 +1 @@\n+export const shout = (s: string): string => s.toUpperCase();",
    );
    const data = JSON.parse(ok(json).stdout) as {
      changes: {
        before: { hash: string };
        after: { hash: string; bytes: number };
        sources: Array<{ path: string; change: string }>;
      };
    };
    expect(data.changes.before.hash).toBe(before.artifact_hash);
    expect(data.changes.after).toEqual({ hash: after.artifact_hash, bytes: size(after.artifact_path) });
    expect(data.changes.sources.map((s) => [s.path, s.change])).toEqual([
      ["index.ts", "changed"],
      ["shout.ts", "added"],
    ]);
  },
  SLOW,
);

test(
  "re-approving keeps an earlier --only; the withheld rule is not new at the upgrade's review; --all widens; --only with --all is bad usage",
  async () => {
    const home = join(root, "h-narrow");
    const src = copy("weather", "weather-narrow");
    edit(
      join(src, "manifest.toml"),
      'allow = ["GET http://127.0.0.1:17311/v1"]',
      'allow = ["https://api.example.com", "https://tracker.example.com"]',
    );
    ok(await tether(home, "install", src));
    ok(await tether(home, "approve", "weather", "--only", "https://api.example.com", "--yes"));
    edit(join(src, "manifest.toml"), 'version = "1.0.0"', 'version = "1.1.0"');
    ok(await tether(home, "install", src));
    const review = ok(await tether(home, "review", "weather")).stdout;
    expect(review).toContain(
      "  the network: https://tracker.example.com   (withheld by an earlier --only: approving keeps it out; --all grants it)",
    );
    expect(review).not.toContain("[NEW]");
    expect(review).toContain(
      "Changed since approval (nothing widened):\n  files that differ: manifest.toml (changed)\n  to see how: tether review weather --diff",
    );
    // A manifest-only upgrade: the artifact is the approved one, the manifest's old text was kept.
    const diff = ok(await tether(home, "review", "weather", "--diff")).stdout;
    expect(diff).toContain(
      '--- a/manifest.toml\n+++ b/manifest.toml\n@@ -1,5 +1,5 @@\n name = "weather"\n-version = "1.0.0"\n+version = "1.1.0"',
    );

    const again = ok(await tether(home, "approve", "weather", "--yes"));
    expect(again.stdout).toBe(
      "approved weather 1.1.0 (egress: https://api.example.com; still withheld by an earlier --only: https://tracker.example.com (--all grants it))",
    );
    const both = await tether(home, "approve", "weather", "--all", "--only", "https://api.example.com", "--yes");
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--only and --all do not combine");
    const all = ok(await tether(home, "approve", "weather", "--all", "--yes"));
    expect(all.stdout).toBe("approved weather 1.1.0 (egress: https://api.example.com, https://tracker.example.com)");
  },
  SLOW,
);

test(
  "installing another folder under an installed name warns and asks: declined without a terminal (exit 3, nothing replaced); --yes replaces it",
  async () => {
    const home = join(root, "h-folder");
    const first = copy("echo", "echo-first");
    const second = copy("echo", "echo-second");
    ok(await tether(home, "install", first));
    const declined = await tether(home, "install", second);
    expect(declined.code).toBe(3);
    expect(declined.stderr).toContain(
      `warning: 'echo' is installed from ${first}; ${second} is another folder: installing it replaces that install`,
    );
    expect(declined.stderr).toContain(
      `not installed: echo is installed from ${first}, not ${second}; no terminal to confirm on: pass --yes to replace it from a script`,
    );
    expect(installed(home, "echo").source_dir).toBe(first);
    // The same folder again asks nothing.
    ok(await tether(home, "install", first));
    const replaced = ok(await tether(home, "install", second, "--yes"));
    expect(replaced.stderr).toContain(`… warning: 'echo' is installed from ${first}; ${second} is another folder`);
    expect(installed(home, "echo").source_dir).toBe(second);
  },
  SLOW,
);

test(
  "doctor collects artifacts and Deno caches no install refers to, and names a wrong policy.toml key (exit 1)",
  async () => {
    const home = join(root, "h-doctor");
    ok(await tether(home, "install", copy("echo", "echo-doctor")));
    const kept = installed(home, "echo");
    const stray = ["ghost-0123456789abcdef.js", "echo-fedcba9876543210.js.tmp"];
    for (const name of stray) writeFileSync(join(home, "artifacts", name), "// left behind");
    const cache = join(home, "cache", "deno", `${"ab".repeat(16)}-${"cd".repeat(8)}`);
    const keptCache = join(home, "cache", "deno", `${kept.artifact_hash.slice(0, 32)}-${"cd".repeat(8)}`);
    mkdirSync(cache, { recursive: true });
    mkdirSync(keptCache, { recursive: true });
    writeFileSync(join(home, "policy.toml"), '[net]\nreach = ["loopback"]\nalow_private = true\n');

    const run = await tether(home, "doctor");
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `ok   artifacts: 1 installed in ${join(home, "artifacts")}; removed what no install refers to: `,
    );
    for (const name of [...stray, `cache/deno/${"ab".repeat(16)}-${"cd".repeat(8)}`])
      expect(run.stdout).toContain(name);
    expect(run.stdout).toContain(
      `FAIL policy: ${join(home, "policy.toml")}: net.alow_private: unknown key; [net] takes deny, reach, metadata, allow_private, max_body_bytes, max_fetches, max_request_bytes, max_redirects. Until it is fixed every egress call is refused`,
    );
    expect(readdirSync(join(home, "artifacts"))).toEqual([kept.artifact_path.split("/").at(-1)]);
    expect([existsSync(cache), existsSync(keptCache)]).toEqual([false, true]);
  },
  SLOW,
);

test(
  "a loopback rule is flagged at review with the switch it needs; the call is then refused operator:no-private as flagged; with the switch on, no flag",
  async () => {
    const home = join(root, "h-reach");
    ok(await tether(home, "install", copy("weather", "weather-reach")));
    const policy = join(home, "policy.toml");
    const flag = `      ! every call to its loopback addresses is refused (operator:no-private): add "loopback" to [net] reach in ${policy} to let approved rules reach loopback addresses`;
    const review = ok(await tether(home, "review", "weather"));
    expect(review.stdout).toContain(`  the network: GET http://127.0.0.1:17311/v1\n      means: `);
    expect(review.stdout).toContain(flag);
    const json = JSON.parse(ok(await tether(home, "review", "weather", "--json")).stdout) as { reach: unknown[] };
    expect(json.reach).toEqual([
      {
        rule: "GET http://127.0.0.1:17311/v1",
        class: "loopback",
        refusal: "operator:no-private",
        fix: expect.stringContaining('add "loopback"'),
      },
    ]);

    ok(await tether(home, "approve", "weather", "--yes"));
    const call = await tether(
      home,
      "call",
      "weather",
      "fetch_url",
      JSON.stringify({ url: "http://127.0.0.1:17311/v1/forecast" }),
    );
    expect(call.code).toBe(4);
    expect(call.stderr).toContain("(rule: operator:no-private)");

    writeFileSync(policy, '[net]\nreach = ["loopback"]\n');
    const after = ok(await tether(home, "review", "weather"));
    expect(after.stdout).not.toContain("! every call");
    writeFileSync(policy, "[net\n");
    const broken = ok(await tether(home, "review", "weather"));
    expect(broken.stdout).toMatch(
      / {2}! the operator's policy does not parse, so every egress call is refused until it is fixed: .*policy\.toml \(line 1, column \d+\): not valid TOML/,
    );
  },
  SLOW,
);
