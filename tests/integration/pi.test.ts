/**
 * The pi coding agent, unchanged: the real `pi` CLI (pinned in
 * tests/third-party/pi) in non-interactive JSON mode, its agent dir in a temp
 * folder, its model a fake OpenAI-compatible API on loopback that scripts
 * three tool calls of jailed tools (tests/support/fake-openai-api.ts). pi
 * loads packages/pi (`-e`), which drives a real `tether serve` on a home where
 * echo, guard and briefing are installed and approved — the config and the
 * environment docs/harness.md shows.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa, type ResultPromise } from "execa";
import { WebSocket } from "ws";
import { Broker } from "../../broker/broker.js";
import { silentLogger } from "../../broker/base/log.js";
import { envOptions } from "../support/env-options.js";
import { startFakeOpenAiApi, type FakeOpenAiApi } from "../support/fake-openai-api.js";
import { REPO } from "../support/satellites.js";
import { thirdParty } from "../support/third-party.js";
import { until } from "../support/wait.js";

const BIN = join(REPO, "bin", "tether.js");
const EXTENSION = join(REPO, "packages", "pi");
/** The first run installs pi (npm ci); each run boots tether serve and three satellites. */
const SLOW = 180_000;
const SESSION = "pi-test";

let root: string;
let home: string;
let serve: { child: ResultPromise; url: string; stdout: () => string };
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "tether-pi-"));
  home = join(root, "home");
  const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
  try {
    for (const name of ["echo", "guard", "briefing"]) {
      const { installed } = await broker.registry.install(join(REPO, "manifests", name));
      broker.registry.approve(installed.manifest.name);
    }
  } finally {
    await broker.close();
  }
  const child = execa(process.execPath, [BIN, "serve", "--home", home, "--port", "0"], {
    cwd: REPO,
    stdin: "ignore",
    reject: false,
    env: { TETHER_LOG: "error" },
  });
  let stdout = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  const listening = /listening on (ws:\/\/\S+)/;
  await until("tether serve listening", () => listening.test(stdout) || child.exitCode !== null, SLOW);
  const url = listening.exec(stdout)?.[1];
  if (url === undefined) throw new Error(`tether serve did not start: ${stdout}`);
  serve = { child, url, stdout: () => stdout };
}, SLOW);
afterAll(async () => {
  serve?.child.kill("SIGTERM");
  const ended = await serve?.child;
  rmSync(root, { recursive: true, force: true });
  expect(ended?.exitCode).toBe(0);
});

/** pi's agent dir: one provider, the fake, with one model (pi's models.json; docs/harness.md shows it). */
function agentDir(name: string, api: FakeOpenAiApi): string {
  const dir = join(root, name, "agent");
  mkdirSync(dir, { recursive: true });
  const models = {
    providers: {
      fake: {
        baseUrl: api.baseUrl,
        api: "openai-completions",
        apiKey: "test-only-key",
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [{ id: "fake-model", reasoning: false, input: ["text"], contextWindow: 128000, maxTokens: 4096 }],
      },
    },
  };
  writeFileSync(join(dir, "models.json"), JSON.stringify(models));
  return dir;
}

interface PiRun {
  readonly code: number | undefined;
  /** `--mode json`: one event per line. */
  readonly events: { type: string; [key: string]: unknown }[];
  readonly stderr: string;
}

/** `pi --mode json` in a workspace of its own, loading packages/pi, with `tether` as its TETHER_* variables. */
async function pi(name: string, api: FakeOpenAiApi, tether: Record<string, string>): Promise<PiRun> {
  const workspace = join(root, name, "project");
  mkdirSync(workspace, { recursive: true });
  const cli = join(thirdParty("pi"), "node_modules", "@mariozechner", "pi-coding-agent", "dist", "cli.js");
  const run = await execa(
    process.execPath,
    [
      cli,
      "--mode",
      "json",
      "--no-session",
      "--provider",
      "fake",
      "--model",
      "fake-model",
      "-e",
      EXTENSION,
      "Use the tools.",
    ],
    {
      cwd: workspace,
      extendEnv: false,
      env: {
        HOME: join(root, name),
        PATH: process.env["PATH"] ?? "/usr/bin:/bin",
        PI_CODING_AGENT_DIR: agentDir(name, api),
        PI_OFFLINE: "1",
        ...tether,
      },
      stdin: "ignore",
      reject: false,
      timeout: 60_000,
    },
  );
  const events = run.stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as PiRun["events"][number]);
  return { code: run.exitCode, events, stderr: run.stderr };
}

/** One JSON-RPC request to the running serve, its whole answer. */
async function rpc(method: string, params: unknown): Promise<{ result?: unknown; error?: { code: number } }> {
  const token = readFileSync(join(home, "serve.token"), "utf8").trim();
  const ws = new WebSocket(serve.url, { headers: { Authorization: `Bearer ${token}` } });
  try {
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const answer = new Promise<string>((resolve) => ws.once("message", (data) => resolve(data.toString())));
    ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }));
    return JSON.parse(await answer) as { result?: unknown; error?: { code: number } };
  } finally {
    ws.close();
  }
}

test(
  "pi offers the jailed tools with their schemas, runs them through tether serve, and Tether's hooks hold a call",
  async () => {
    // A folder pi's own bash tool is asked to delete: guard's tool_call hook must stop it.
    const victim = join(root, "victim");
    mkdirSync(victim, { recursive: true });
    const api = await startFakeOpenAiApi([
      { name: "echo", arguments: { text: "from pi" } },
      { name: "echo", arguments: { text: "rm -rf /" } },
      { name: "count", arguments: { n: 2 } },
      { name: "bash", arguments: { command: `rm -rf ${victim}` } },
      { name: "bash", arguments: { command: "echo harness-ok" } },
    ]);
    try {
      const run = await pi("run", api, {
        TETHER_URL: serve.url,
        TETHER_TOKEN_FILE: join(home, "serve.token"),
        TETHER_SESSION: SESSION,
      });
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });

      // The model was offered the jailed tools with the manifests' JSON Schemas, beside pi's own.
      const offered = new Map(api.requests[0]!.tools!.map((t) => [t.function.name, t.function]));
      expect(offered.get("echo")).toEqual({
        name: "echo",
        description: "Returns the text it was given.",
        parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        strict: false,
      });
      expect(offered.get("count")?.parameters).toEqual({
        type: "object",
        properties: { n: { type: "integer", minimum: 1, maximum: 100 } },
        required: ["n"],
      });
      expect(offered.has("bash")).toBe(true);

      // The tools' real outputs went back to the model; guard's tool_call hook blocked the rm -rf.
      const results = new Map(api.toolResults.map((m) => [m.tool_call_id, m.content]));
      expect(results.get("call_1")).toBe("from pi");
      expect(results.get("call_2")).toBe(
        "blocked: Blocked by 'guard': guard: the arguments to 'echo' contain `rm -rf`, which this workspace " +
          "does not allow; delete specific files by name, or ask the user to run it themselves.",
      );
      expect(results.get("call_3")).toBe('Counted to 2\n{"n":2}');
      // pi's own bash came before the same hooks: the rm -rf did not run, the echo did.
      expect(results.get("call_4")).toContain(
        "Blocked by 'guard': guard: the arguments to 'bash' contain `rm -rf`, which this workspace does not allow",
      );
      expect(existsSync(victim)).toBe(true);
      expect(results.get("call_5")).toContain("harness-ok");
      const ended = run.events.filter((e) => e.type === "tool_execution_end");
      expect(ended.find((e) => e["toolCallId"] === "call_2")?.["isError"]).toBe(true);
      expect(ended.find((e) => e["toolCallId"] === "call_1")?.["isError"]).toBe(false);

      // count's partials reached pi as streaming updates.
      const updates = run.events
        .filter((e) => e.type === "tool_execution_update" && e["toolCallId"] === "call_3")
        .map((e) => JSON.stringify(e["partialResult"]));
      expect(updates.some((u) => u.includes("counted 1 of 2"))).toBe(true);

      // briefing's session_start context and its context hook's reminder reached the model.
      const firstAsked = JSON.stringify(api.requests[0]!.messages);
      expect(firstAsked).toContain("briefing: you are working in 'project'.");
      expect(firstAsked).toContain("briefing: reminder");

      // The model read the results and ended the turn with its text.
      const last = run.events.filter((e) => e.type === "message_end").at(-1)?.["message"] as {
        role: string;
        stopReason: string;
        content: { type: string; text?: string }[];
      };
      expect(last.role).toBe("assistant");
      expect(last.stopReason).toBe("stop");
      expect(last.content[0]?.text).toContain('the tools said: ["from pi","blocked: Blocked by \'guard\'');

      // The ledger has the calls, under the session pi opened.
      const audit = await execa(process.execPath, [BIN, "audit", "--json", "--session", SESSION, "--home", home], {
        cwd: REPO,
        reject: false,
      });
      expect(audit.exitCode).toBe(0);
      const tools = (JSON.parse(audit.stdout) as { kind: string; name: string; outcome: string }[])
        .filter((row) => row.kind === "tool")
        .map((row) => `${row.name} ${row.outcome}`)
        .sort();
      expect(tools).toEqual(["count ok", "echo blocked", "echo ok"]);

      // pi's shutdown closed the session on the server.
      expect((await rpc("session.status", { session: SESSION })).error?.code).toBe(-32002);
    } finally {
      await api.close();
    }
  },
  SLOW,
);

test(
  "a wrong token or no server stops pi before it starts, with what to change and never the token",
  async () => {
    const api = await startFakeOpenAiApi([{ name: "echo", arguments: { text: "never" } }]);
    try {
      const wrong = await pi("wrong-token", api, { TETHER_URL: serve.url, TETHER_TOKEN: "not-the-token" });
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain(
        `Tether: tether serve at ${serve.url} refused the token from TETHER_TOKEN (HTTP 401). Set TETHER_TOKEN`,
      );
      expect(wrong.stderr).not.toContain("not-the-token");
      expect(wrong.stderr).not.toMatch(/\n\s+at /);

      const socket = join(root, "nobody.sock");
      const gone = await pi("no-server", api, { TETHER_URL: `ws+unix:${socket}`, TETHER_TOKEN: "x".repeat(64) });
      expect(gone.code).toBe(1);
      expect(gone.stderr).toContain(
        `Tether: cannot reach tether serve at ws+unix:${socket} (ENOENT). Start it with \`tether serve\``,
      );
      expect(api.requests).toEqual([]);
    } finally {
      await api.close();
    }
  },
  SLOW,
);
