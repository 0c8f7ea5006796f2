/**
 * Claude Code, unchanged: the real `claude` CLI (pinned in
 * tests/third-party/claude-code) in print mode, telemetry and everything
 * non-essential off, its Messages API a fake on loopback that scripts one
 * tool_use (tests/support/fake-messages-api.ts). It runs jailed tools through
 * `tether mcp` over stdio and over HTTP, with the config each test writes
 * (docs/harness.md shows the same), and a hooks.json matcher written with the
 * name Claude Code shows (`mcp__tether__echo`) holds the call.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { execa } from "execa";
import { Broker } from "../../broker/broker.js";
import { silentLogger } from "../../broker/base/log.js";
import { envOptions, passedEnv } from "../support/env-options.js";
import { startFakeMessagesApi, type FakeMessagesApi } from "../support/fake-messages-api.js";
import { startMcpHttp } from "../support/mcp-http-server.js";
import { REPO } from "../support/satellites.js";
import { thirdParty } from "../support/third-party.js";

const BIN = join(REPO, "bin", "tether.js");
/** The first run installs Claude Code (a native binary of ~400 MB); each run boots tether mcp. */
const SLOW = 300_000;

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "tether-claude-code-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The native binary: the platform package's, else the wrapper's (which its postinstall replaces with it). */
function claudeBinary(): string {
  const dir = join(thirdParty("claude-code"), "node_modules", "@anthropic-ai");
  const native = join(dir, `claude-code-${process.platform}-${process.arch}`, "claude");
  return existsSync(native) ? native : join(dir, "claude-code", "bin", "claude.exe");
}

/** What `tether mcp` needs from this environment when Claude Code starts it (it passes only `env`). */
function tetherEnv(): Record<string, string> {
  return { ...passedEnv(), TETHER_LOG: "error", ...(process.env.PATH !== undefined ? { PATH: process.env.PATH } : {}) };
}

/** The `mcpServers` entry that starts `tether mcp` on stdio for `session` of `home` (docs/harness.md). */
function stdioTether(home: string, session: string): unknown {
  return {
    tether: { command: process.execPath, args: [BIN, "mcp", "--session", session, "--home", home], env: tetherEnv() },
  };
}

/** A home with manifests/echo installed and approved. */
async function echoHome(name: string): Promise<string> {
  const home = join(root, name);
  const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
  try {
    const { installed } = await broker.registry.install(join(REPO, "manifests", "echo"));
    broker.registry.approve(installed.manifest.name);
  } finally {
    await broker.close();
  }
  return home;
}

interface ClaudeRun {
  readonly code: number | undefined;
  /** The `--output-format json` result: the final text, and whether it was an error. */
  readonly result: { result: string; is_error: boolean; num_turns: number } | null;
  readonly stderr: string;
}

/** `claude -p` with `mcpServers` as its only MCP config, talking to `api`, allowed to run `tool`. */
async function claude(name: string, api: FakeMessagesApi, mcpServers: unknown, tool: string): Promise<ClaudeRun> {
  const dir = join(root, name);
  mkdirSync(join(dir, "claude-home"), { recursive: true });
  const config = join(dir, "mcp.json");
  writeFileSync(config, JSON.stringify({ mcpServers }));
  const run = await execa(
    claudeBinary(),
    [
      "-p",
      "Use the tool.",
      "--mcp-config",
      config,
      "--strict-mcp-config",
      "--allowedTools",
      tool,
      "--output-format",
      "json",
    ],
    {
      cwd: dir,
      extendEnv: false,
      env: {
        HOME: join(dir, "claude-home"),
        PATH: process.env["PATH"] ?? "/usr/bin:/bin",
        ANTHROPIC_BASE_URL: api.url,
        ANTHROPIC_API_KEY: "sk-ant-test-only",
        // MCP tools offered at once, not behind the ToolSearch tool (the fake scripts one call).
        ENABLE_TOOL_SEARCH: "false",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      stdin: "ignore",
      reject: false,
      timeout: 120_000,
    },
  );
  let result: ClaudeRun["result"] = null;
  try {
    result = JSON.parse(run.stdout) as ClaudeRun["result"];
  } catch {
    // Not JSON: the test's expectations show stdout and stderr.
  }
  return { code: run.exitCode, result, stderr: `${run.stdout}\n${run.stderr}` };
}

/** The ledger rows of `session`, oldest first. */
function ledger(home: string, session: string): { name: string; outcome: string }[] {
  const db = new Database(join(home, "tether.db"), { readonly: true });
  try {
    return db
      .prepare("select name, outcome from invocations where session_id = ? and kind = 'tool' order by seq, id")
      .all(session) as { name: string; outcome: string }[];
  } finally {
    db.close();
  }
}

test(
  "over stdio: Claude Code lists the session's tools as mcp__tether__* and runs a jailed one",
  async () => {
    const home = await echoHome("stdio-home");
    const api = await startFakeMessagesApi("mcp__tether__echo", { text: "from claude code" });
    try {
      const run = await claude("stdio", api, stdioTether(home, "cc-stdio"), "mcp__tether__echo");
      expect({ code: run.code, result: run.result?.result }).toEqual({
        code: 0,
        result: 'the tool said: [{"type":"text","text":"from claude code"}]',
      });
      expect(api.offered[0]).toEqual(expect.arrayContaining(["mcp__tether__echo", "mcp__tether__count"]));
      expect(api.results).toEqual([expect.objectContaining({ content: [{ type: "text", text: "from claude code" }] })]);
      expect(api.results[0]!.is_error).not.toBe(true);
      expect(ledger(home, "cc-stdio")).toEqual([{ name: "echo", outcome: "ok" }]);
    } finally {
      await api.close();
    }
  },
  SLOW,
);

test(
  "over HTTP: the same through tether mcp --http, the bearer token in the config's headers",
  async () => {
    const httpRoot = join(root, "http-server");
    mkdirSync(httpRoot, { recursive: true });
    const server = await startMcpHttp(httpRoot, "cc-http", SLOW);
    const api = await startFakeMessagesApi("mcp__tether__test_simple_text", {});
    try {
      const run = await claude(
        "http",
        api,
        {
          tether: {
            type: "http",
            url: `http://127.0.0.1:${server.port}/mcp`,
            headers: { Authorization: `Bearer ${server.token}` },
          },
        },
        "mcp__tether__test_simple_text",
      );
      expect({ code: run.code, result: run.result?.result }).toEqual({
        code: 0,
        result: 'the tool said: [{"type":"text","text":"This is a simple text response for testing."}]',
      });
      expect(ledger(join(httpRoot, "home"), "cc-http")).toEqual([{ name: "test_simple_text", outcome: "ok" }]);
    } finally {
      await api.close();
      expect(await server.stop()).toBe(0);
    }
  },
  SLOW,
);

test(
  "a hooks.json matcher written with Claude Code's name for the tool holds the call; Claude Code reads the refusal",
  async () => {
    const home = await echoHome("hooks-home");
    writeFileSync(
      join(home, "hooks.json"),
      JSON.stringify({
        hooks: {
          PreToolUse: [
            {
              matcher: "mcp__tether__echo",
              hooks: [{ type: "command", command: "echo 'echo is off today (hooks.json)' >&2; exit 2" }],
            },
          ],
        },
      }),
    );
    const enabled = await execa(process.execPath, [BIN, "session", "enable", "hooks", "--home", home], {
      cwd: REPO,
      reject: false,
    });
    expect(enabled.exitCode).toBe(0);
    const api = await startFakeMessagesApi("mcp__tether__echo", { text: "x" });
    try {
      const run = await claude("hooks", api, stdioTether(home, "cc-hooks"), "mcp__tether__echo");
      expect(run.code).toBe(0);
      expect(api.results).toHaveLength(1);
      expect(api.results[0]!.is_error).toBe(true);
      expect(JSON.stringify(api.results[0]!.content)).toContain(
        "blocked: Blocked by 'hooks': echo is off today (hooks.json)",
      );
      expect(ledger(home, "cc-hooks")).toEqual([{ name: "echo", outcome: "blocked" }]);
    } finally {
      await api.close();
    }
  },
  SLOW,
);
