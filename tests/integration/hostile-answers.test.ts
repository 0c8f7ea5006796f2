/**
 * A hostile answer, driven end to end through every way of calling a tool:
 * the library, `tether call`, `tether serve` and `tether mcp` (the real binary;
 * the MCP SDK's Client). The extension `fake` (the raw-frame fake satellite,
 * installed) answers past the bounds, at the bounds and with error codes only
 * the broker may choose; each surface answers that one call with the
 * documented outcome and keeps serving: another client's calls to the
 * well-behaved `worker` all succeed meanwhile and after.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { promisify } from "node:util";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { WebSocket } from "ws";
import { Broker } from "../../broker/broker.js";
import { createLogger } from "../../broker/base/log.js";
import { textOf } from "../../broker/base/outcome.js";
import { Session } from "../../broker/sessions/session.js";
import { REPO } from "../support/satellites.js";
import { buildFakeArtifact, installFakeAndWorker } from "./support/fake-extension.js";
import { envOptions, passedEnv } from "../support/env-options.js";

const BIN = join(REPO, "bin", "tether.js");
const SLOW = 120_000;
const run = promisify(execFile);

const DEEP = 100_000;
const PAST_DEPTH = "answered a JSON block nested deeper than 128 levels at .content.0.json";
const FORBIDDEN_CODE = "answered the error code 'running', which a satellite may not give";

/** Each hostile call, and what its answer must say. */
const HOSTILE: ReadonlyArray<{ tool: string; args: unknown; expect: { code: string; has: string } | { ok: true } }> = [
  { tool: "deep_json", args: { depth: DEEP }, expect: { code: "crashed", has: PAST_DEPTH } },
  { tool: "error_code", args: { code: "running" }, expect: { code: "crashed", has: FORBIDDEN_CODE } },
  { tool: "error_code", args: { code: "ok" }, expect: { code: "crashed", has: "answered the error code 'ok'" } },
  // At the bounds: legal, and every surface renders it.
  { tool: "deep_json", args: { depth: 128 }, expect: { ok: true } },
  { tool: "wide_json", args: { count: 99_999 }, expect: { ok: true } },
];

/** Arguments past the caller bounds: refused before they reach a satellite. */
const DEEP_ARGS = JSON.parse(`{"text":${"[".repeat(1000)}${"]".repeat(1000)}}`) as unknown;

let tmp: string;
let home: string;

/** The environment the spawned CLI runs in (only what it needs). */
function cliEnv(): Record<string, string> {
  return { ...passedEnv(), PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmp };
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-hostile-"));
  home = join(tmp, "home");
  const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
  try {
    await installFakeAndWorker(broker, await buildFakeArtifact("serve"));
  } finally {
    await broker.destroy();
  }
}, SLOW);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test(
  "the library: each hostile answer is that call's outcome, textOf renders it, the ledger holds only outcomes the broker chose, another session keeps serving",
  async () => {
    const broker = Broker.open({ ...envOptions(), home, log: createLogger({ level: "error" }) });
    const hostile = await Session.open(broker, { id: "hostile", workspace: tmp });
    const other = await Session.open(broker, { id: "other", workspace: tmp });
    try {
      let served = 0;
      let done = false;
      const steady = (async () => {
        while (!done) {
          const r = await other.callTool("run", JSON.stringify({ text: `n${served}` }));
          expect(textOf(r.outcome)).toBe(`ran: n${served}`);
          served++;
        }
      })();
      for (const h of HOSTILE) {
        const { outcome } = await hostile.callTool(h.tool, JSON.stringify(h.args));
        if ("ok" in h.expect) expect(outcome.ok).toBe(true);
        else {
          expect(outcome).toMatchObject({ ok: false, error: { code: h.expect.code } });
          if (!outcome.ok) expect(outcome.error.msg).toContain(h.expect.has);
        }
        expect(typeof textOf(outcome)).toBe("string");
      }
      const refused = await hostile.callTool("echo", JSON.stringify(DEEP_ARGS));
      expect(refused.outcome).toMatchObject({ ok: false, error: { code: "bad_arguments" } });
      done = true;
      await steady;
      expect(served).toBeGreaterThan(0);

      broker.ledger.flush();
      const outcomes = broker.store.sqlite
        .prepare("select distinct outcome from invocations where session_id = 'hostile'")
        .all() as Array<{ outcome: string }>;
      expect(outcomes.map((o) => o.outcome).sort()).toEqual(["bad_arguments", "crashed", "ok"]);
    } finally {
      await hostile.close();
      await other.close();
      await broker.destroy();
    }
  },
  SLOW,
);

test(
  "`tether call`: a hostile answer exits 4 (call failed) and the bound on stderr; at the bounds it prints the answer",
  async () => {
    const call = (tool: string, args: unknown) =>
      run(process.execPath, [BIN, "call", "fake", tool, JSON.stringify(args), "--home", home], {
        cwd: REPO,
        env: cliEnv(),
        maxBuffer: 64 * 1024 * 1024,
      }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
      );
    const past = await call("deep_json", { depth: DEEP });
    expect(past.stderr).toContain(`crashed: 'deep_json' ${PAST_DEPTH}`);
    expect(past.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(past.code).toBe(4);

    const forbidden = await call("error_code", { code: "running" });
    expect(forbidden.stderr).toContain(`crashed: 'error_code' ${FORBIDDEN_CODE}`);
    expect(forbidden.code).toBe(4);

    const atBound = await call("deep_json", { depth: 128 });
    expect(atBound.code).toBe(0);
    expect(atBound.stdout.trim()).toBe("[".repeat(128) + "]".repeat(128));
  },
  SLOW,
);

// ── tether serve ─────────────────────────────────────────────────────────

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Message = any;

class RpcClient {
  readonly #pending = new Map<number, (m: Message) => void>();
  #next = 0;
  constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      const m = JSON.parse(data.toString("utf8")) as Message;
      if (typeof m.id === "number") this.#pending.get(m.id)?.(m);
    });
  }
  static async connect(url: string, token: string): Promise<RpcClient> {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` }, maxPayload: 64 * 1024 * 1024 });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    return new RpcClient(ws);
  }
  request(method: string, params: unknown): Promise<Message> {
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      // A guard, not a timing: a request never answered fails naming itself.
      const guard = setTimeout(
        () => reject(new Error(`no answer to ${method} ${JSON.stringify(params).slice(0, 200)}`)),
        30_000,
      );
      this.#pending.set(id, (m) => {
        clearTimeout(guard);
        resolve(m);
      });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }
}

test(
  "`tether serve`: each hostile answer is that request's result, arguments past the bounds are -32602, and another client is served throughout",
  async () => {
    const child = spawn(process.execPath, [BIN, "serve", "--home", home, "--port", "0"], {
      cwd: REPO,
      env: cliEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      const line = await new Promise<RegExpExecArray>((resolve, reject) => {
        const look = () => {
          const m = /^tether serve: listening on (\S+) \(token file: (.+)\)$/m.exec(out);
          if (m !== null) resolve(m);
        };
        child.stdout.on("data", look);
        void exited.then((code) => reject(new Error(`tether serve exited ${String(code)}:\n${out}\n${err}`)));
      });
      const token = readFileSync(line[2]!, "utf8").trim();
      const a = await RpcClient.connect(line[1]!, token);
      const b = await RpcClient.connect(line[1]!, token);
      expect((await a.request("session.open", { id: "a", workspace: tmp })).result).toBeDefined();
      expect((await b.request("session.open", { id: "b", workspace: tmp })).result).toBeDefined();

      let served = 0;
      let done = false;
      const steady = (async () => {
        while (!done) {
          const m = await b.request("tool.call", { session: "b", tool: "run", arguments: { text: `n${served}` } });
          expect(m.result?.outcome).toEqual({
            ok: true,
            value: { content: [{ type: "text", text: `ran: n${served}` }], terminate: false },
          });
          served++;
        }
      })();
      for (const h of HOSTILE) {
        const m = await a.request("tool.call", { session: "a", tool: h.tool, arguments: h.args });
        if ("ok" in h.expect) expect(m.result.outcome.ok).toBe(true);
        else {
          expect(m.result.outcome).toMatchObject({ ok: false, error: { code: h.expect.code } });
          expect(m.result.outcome.error.msg).toContain(h.expect.has);
        }
      }
      // Arguments past the caller bounds make the message itself too deep: it is refused
      // before it is parsed, so the answer cannot carry the request's id (docs/api.md).
      const deep = await new Promise<Message>((resolve) => {
        a.ws.once("message", (data: Buffer) => resolve(JSON.parse(data.toString("utf8"))));
        a.ws.send(
          JSON.stringify({
            jsonrpc: "2.0",
            id: 99,
            method: "tool.call",
            params: { session: "a", tool: "echo", arguments: DEEP_ARGS },
          }),
        );
      });
      expect(deep).toMatchObject({ id: null, error: { code: -32602, data: { code: "bad_arguments" } } });
      expect(deep.error.message).toContain("64 levels");

      done = true;
      await steady;
      expect(served).toBeGreaterThan(0);
      // The server is still up and serving the hostile client too.
      expect(
        (await a.request("tool.call", { session: "a", tool: "echo", arguments: { text: "still here" } })).result
          .outcome,
      ).toMatchObject({ ok: true });
      expect(child.exitCode).toBeNull();
      expect(err).not.toContain("RangeError");
      a.ws.close();
      b.ws.close();
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
  },
  SLOW,
);

// ── tether mcp ───────────────────────────────────────────────────────────

async function mcpClient(session: string): Promise<{ client: McpClient; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", "--session", session, "--home", home, "--workspace", tmp],
    env: cliEnv(),
    cwd: REPO,
    stderr: "pipe",
  });
  let stderr = "";
  (transport.stderr as Readable).on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new McpClient({ name: "tether-hostile-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

function textsOf(result: unknown): string {
  return (result as CallToolResult).content.map((c) => (c.type === "text" ? c.text : `(${c.type})`)).join("\n");
}

test(
  "`tether mcp`: each hostile answer is that call's tool error (or result at the bounds), arguments past the bounds are -32602; another MCP client on the same home is served throughout",
  async () => {
    const hostile = await mcpClient("mcp-hostile");
    const other = await mcpClient("mcp-other");
    try {
      let served = 0;
      let done = false;
      const steady = (async () => {
        while (!done) {
          const r = await other.client.callTool({ name: "run", arguments: { text: `n${served}` } });
          expect(textsOf(r)).toBe(`ran: n${served}`);
          served++;
        }
      })();
      for (const h of HOSTILE) {
        const r = (await hostile.client.callTool({
          name: h.tool,
          arguments: h.args as Record<string, unknown>,
        })) as CallToolResult;
        if ("ok" in h.expect) expect(r.isError ?? false).toBe(false);
        else {
          expect(r.isError).toBe(true);
          expect(textsOf(r)).toContain(h.expect.has);
        }
      }
      // Past the JSON bounds of a message, as over HTTP (400) and `tether serve` (-32602): refused
      // before it is parsed, answered for its id.
      await expect(
        hostile.client.callTool({ name: "echo", arguments: DEEP_ARGS as Record<string, unknown> }),
      ).rejects.toMatchObject({ code: -32602, message: expect.stringContaining("nested deeper than 64 levels") });
      done = true;
      await steady;
      expect(served).toBeGreaterThan(0);
      expect(textsOf(await hostile.client.callTool({ name: "echo", arguments: { text: "still here" } }))).toBe(
        "still here",
      );
      expect(hostile.stderr()).not.toContain("RangeError");
    } finally {
      await hostile.client.close();
      await other.client.close();
    }
  },
  SLOW,
);

test(
  "`tether mcp`: a line past its 4 MiB bound is refused as it is read and skipped, saying why; the next line is served (docs/mcp.md)",
  async () => {
    const child = spawn(process.execPath, [BIN, "mcp", "--session", "mcp-long", "--home", home, "--workspace", tmp], {
      cwd: REPO,
      env: cliEnv(),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let err = "";
    let out = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    // 11 MiB without a newline (past the SDK's 10 MiB too): never held whole, then its end and a ping.
    for (let i = 0; i < 11; i++) child.stdin.write(chunk);
    child.stdin.write(`\n${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })}\n`);
    const deadline = Date.now() + 30_000;
    while (!out.includes("\n") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(JSON.parse(out.split("\n")[0]!)).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    expect(err).toContain("protocol error: a message line longer than 4194304 bytes was refused");
    child.stdin.end();
    expect(await exited).toBe(0);
  },
  SLOW,
);
