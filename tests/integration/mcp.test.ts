/**
 * `tether mcp` driven by the MCP SDK's own Client over StdioClientTransport,
 * spawning the real `node bin/tether.js mcp --session s1 --home <tmp>` on a
 * home where real extensions were installed and approved through the library:
 * worker (run, fetch, secret, ticks), hooker (blocks a call that asks it to,
 * adds context after each tool, withholds a result holding SECRET) and broken
 * (fails to boot: inactive, its tool not served). guard (blocks `rm -rf`,
 * priority -100) gets a home of its own: its /flag command collides with
 * hooker's, so the two are never active in one session.
 *
 * The tests of the first describe share one server and run in order; the last
 * one closes it.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  LoggingMessageNotificationSchema,
  type CallToolResult,
  type LoggingMessageNotification,
  type Progress,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import Database from "better-sqlite3";
import { execa } from "execa";
import { Broker } from "../../broker/broker.js";
import { readManifest } from "../../broker/install/manifest.js";
import { silentLogger } from "../../broker/base/log.js";
import { REPO } from "../support/satellites.js";
import { envOptions, passedEnv } from "../support/env-options.js";
import { until } from "../support/wait.js";

const BIN = join(REPO, "bin", "tether.js");
const FIXTURES = join(REPO, "tests/integration/fixtures/bus");
const WORKER = readManifest(join(FIXTURES, "worker"));
const HOOKER = readManifest(join(FIXTURES, "hooker"));
/** tsx start-up plus real satellite boots. */
const SLOW = 120_000;

/** What the spawned server needs from this environment (the transport passes only a safe default set). */
function passthroughEnv(): Record<string, string> {
  return passedEnv();
}

interface Server {
  readonly client: Client;
  readonly child: ChildProcess;
  readonly stderr: () => string;
  /** Errors the client's protocol layer saw (a stray line on stdout would be one). */
  readonly errors: Error[];
  readonly listChanged: Tool[][];
  /** `notifications/message` the server sent (hooks' notes). */
  readonly logs: LoggingMessageNotification["params"][];
}

async function startServer(home: string, workspace: string): Promise<Server> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", "--session", "s1", "--home", home, "--workspace", workspace],
    env: passthroughEnv(),
    cwd: REPO,
    stderr: "pipe",
  });
  let stderr = "";
  (transport.stderr as Readable).on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const listChanged: Tool[][] = [];
  const client = new Client(
    { name: "tether-mcp-test", version: "1.0.0" },
    {
      listChanged: {
        tools: {
          autoRefresh: true,
          debounceMs: 0,
          onChanged: (error, tools) => {
            if (error === null && tools !== null) listChanged.push(tools);
          },
        },
      },
    },
  );
  const errors: Error[] = [];
  client.onerror = (err) => errors.push(err);
  const logs: LoggingMessageNotification["params"][] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
  await client.connect(transport);
  // The SDK keeps the child private; its exit code is what "exits 0" is about.
  const child = (transport as unknown as { _process?: ChildProcess })._process;
  if (child === undefined)
    throw new Error("StdioClientTransport no longer keeps its child in _process: find the exit code another way");
  return { client, child, stderr: () => stderr, errors, listChanged, logs };
}

function texts(result: CallToolResult): string[] {
  return result.content.map((c) => (c.type === "text" ? c.text : `(${c.type})`));
}

let root: string;
let home: string;
let guardedHome: string;
let workspace: string;
let server: Server;

/** The store, read as an operator's sqlite3 would. */
function query<T>(sql: string, ...params: unknown[]): T[] {
  return queryIn(home, sql, ...params);
}

/** The last invocation row of a tool in s1, once its finish is written (the ledger writes finishes every 20 ms). */
/** The ids of the rows already committed for a tool in session s1: what a later call's row is not. */
function rowIds(tool: string): Set<number> {
  const rows = query<{ id: number }>("select id from invocations where session_id = 's1' and name = ?", tool);
  return new Set(rows.map((r) => r.id));
}

/** The ledger row of the next call to a tool, once it has ended: the ledger commits in batches, so wait for it. */
async function nextRow(tool: string, before: Set<number>): Promise<{ outcome: string; duration_ms: number | null }> {
  const deadline = Date.now() + 30_000; // a guard against a run that never writes it, not a speed claim
  for (;;) {
    const rows = query<{ id: number; outcome: string; duration_ms: number | null }>(
      "select id, outcome, duration_ms from invocations where session_id = 's1' and name = ?",
      tool,
    );
    const row = rows.find((r) => !before.has(r.id));
    if ((row !== undefined && row.outcome !== "running") || Date.now() > deadline)
      return row === undefined
        ? { outcome: "(no row)", duration_ms: null }
        : { outcome: row.outcome, duration_ms: row.duration_ms };
    await new Promise((r) => setTimeout(r, 25));
  }
}

function queryIn<T>(where: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(join(where, "tether.db"), { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "tether-mcp-"));
  home = join(root, "home");
  guardedHome = join(root, "guarded");
  workspace = join(root, "workspace");
  mkdirSync(workspace);
  const installs: [string, string[]][] = [
    [home, [join(FIXTURES, "worker"), join(FIXTURES, "hooker"), join(FIXTURES, "broken")]],
    [guardedHome, [join(FIXTURES, "worker"), join(REPO, "manifests/guard")]],
  ];
  for (const [where, dirs] of installs) {
    const broker = Broker.open({ ...envOptions(), home: where, log: silentLogger });
    try {
      for (const dir of dirs) {
        const { installed } = await broker.registry.install(dir);
        broker.registry.approve(installed.name);
      }
    } finally {
      await broker.close();
    }
  }
  server = await startServer(home, workspace);
}, SLOW);

afterAll(async () => {
  await server?.client.close().catch(() => {});
  rmSync(root, { recursive: true, force: true });
});

describe("tether mcp over stdio, driven by the SDK's Client", () => {
  test("tools/list: the active extensions' tools with their manifests' JSON Schemas; broken (inactive) serves none", async () => {
    const { tools } = await server.client.listTools();
    const expected = [...WORKER.tool, ...HOOKER.tool].map((t) => t.name).sort();
    expect(tools.map((t) => t.name).sort()).toEqual(expected);
    expect(tools.map((t) => t.name)).not.toContain("never");

    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const t of WORKER.tool) {
      expect(byName[t.name]).toEqual({ name: t.name, description: t.description, inputSchema: t.parameters });
    }
    // run's schema passes through whole, additionalProperties included (nothing converted to zod and back).
    expect(byName["run"]!.inputSchema).toEqual({
      type: "object",
      properties: { text: { type: "string" }, hook: { type: "string" } },
      required: ["text"],
      additionalProperties: false,
    });
    // A tool whose manifest declares no parameters still gets an object schema.
    expect(byName["secret"]!.inputSchema).toEqual({ type: "object" });
    // The server said who is not active, on stderr.
    expect(server.stderr()).toMatch(/not active: broken \(failed to start \(boot_failed\)/);
  });

  test("tools/call: the tool's content as text, hooks' context lines after it", async () => {
    const result = (await server.client.callTool({ name: "run", arguments: { text: "hello" } })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(texts(result)).toEqual(["ran: hello", "hooker saw run end ok=true"]);
    expect(result._meta).toMatchObject({ "tether/extension": "worker", "tether/invocation": expect.any(Number) });
  });

  test(
    "a JSON content block comes back as JSON text",
    async () => {
      // Nothing listens on the documentation address the name resolves to, or the name does not resolve: either way fetch answers JSON.
      const result = (await server.client.callTool({
        name: "fetch",
        arguments: { url: "https://fine.example/x" },
      })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      const [first] = texts(result);
      expect(JSON.parse(first!)).toEqual(expect.objectContaining({ ok: expect.any(Boolean) }));
    },
    SLOW,
  );

  test("a tool_call hook's block is a tool error the model can read: blocked, by whom, why", async () => {
    const before = rowIds("run");
    const result = (await server.client.callTool({
      name: "run",
      arguments: { text: "x", hook: "block" },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(texts(result)).toEqual(["blocked: Blocked by 'hooker': hooker: rm -rf is not allowed"]);
    expect(result._meta).toMatchObject({ "tether/blockedBy": "hooker" });
    // The ledger shows the call, stopped.
    expect((await nextRow("run", before)).outcome).toBe("blocked");
  });

  test("a result withheld by a tool_result hook is a tool error too", async () => {
    const result = (await server.client.callTool({ name: "secret", arguments: {} })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(texts(result)[0]).toBe("blocked: The result was withheld by 'hooker': hooker: the result holds a secret");
    expect(texts(result).join("\n")).not.toContain("42");
  });

  test("bad arguments are a tool error naming the field", async () => {
    const missing = (await server.client.callTool({ name: "run", arguments: {} })) as CallToolResult;
    expect(missing.isError).toBe(true);
    expect(texts(missing)[0]).toBe("bad_arguments: tool 'run': missing property 'text'");

    const wrong = (await server.client.callTool({ name: "run", arguments: { text: 42 } })) as CallToolResult;
    expect(wrong.isError).toBe(true);
    expect(texts(wrong)[0]).toBe("bad_arguments: tool 'run': expected string at .text");

    const extra = (await server.client.callTool({
      name: "run",
      arguments: { text: "x", colour: "red" },
    })) as CallToolResult;
    expect(extra.isError).toBe(true);
    expect(texts(extra)[0]).toBe("bad_arguments: tool 'run': unexpected field colour at .");
  });

  test("a hook's rewrite runs; its notes go to the user (stderr and MCP logging), not into the result", async () => {
    const result = (await server.client.callTool({
      name: "run",
      arguments: { text: "tidy", hook: "rewrite" },
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(texts(result)).toEqual(["ran: tidy (rewritten)", "hooker saw run end ok=true"]);
    expect(server.logs).toContainEqual({ level: "info", logger: "tether", data: "run: hooker rewrote the call" });
    expect(server.stderr()).toContain("tether mcp: run: hooker rewrote the call\n");
  });

  test("an inactive extension's tool and an unknown tool are tool errors, not protocol errors", async () => {
    const inactive = (await server.client.callTool({ name: "never", arguments: {} })) as CallToolResult;
    expect(inactive.isError).toBe(true);
    expect(texts(inactive)[0]).toMatch(
      /^inactive: The tool 'never' belongs to 'broken', which is inactive in this session: failed to start/,
    );

    const unknown = (await server.client.callTool({ name: "nosuch", arguments: {} })) as CallToolResult;
    expect(unknown.isError).toBe(true);
    expect(texts(unknown)[0]).toMatch(/^unknown_tool: Unknown tool 'nosuch'; this session serves \[.*ticks.*\]/);
  });

  test("partials arrive as progress notifications, in order, before the result", async () => {
    const seen: Progress[] = [];
    const result = (await server.client.callTool({ name: "ticks", arguments: { n: 5 } }, undefined, {
      onprogress: (p) => seen.push(p),
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(texts(result)[0]).toBe("ticked 5");
    expect(seen.map((p) => p.message)).toEqual(["tick 1", "tick 2", "tick 3", "tick 4", "tick 5"]);
    expect(seen.map((p) => p.progress)).toEqual([1, 2, 3, 4, 5]);
  });

  test("without a progress token no progress is sent, and the call still answers", async () => {
    const result = (await server.client.callTool({ name: "ticks", arguments: { n: 2 } })) as CallToolResult;
    expect(texts(result)[0]).toBe("ticked 2");
    expect(server.errors).toEqual([]); // an unexpected progress notification would be one
  });

  test(
    "cancelling a call aborts the satellite's call; the server keeps serving",
    async () => {
      const controller = new AbortController();
      const seen: string[] = [];
      const before = rowIds("ticks");
      // 60 ticks take 3 s; the call is cancelled after the third.
      const call = server.client.callTool({ name: "ticks", arguments: { n: 60 } }, undefined, {
        signal: controller.signal,
        onprogress: (p) => {
          seen.push(p.message ?? "");
          if (seen.length === 3) controller.abort("the user pressed stop");
        },
      });
      await expect(call).rejects.toThrow(/the user pressed stop/);
      expect(seen).toEqual(["tick 1", "tick 2", "tick 3"]);

      // The worker's satellite runs one call at a time: had the ticks gone on, this would wait ~2.8 s behind them.
      const next = (await server.client.callTool({ name: "run", arguments: { text: "after" } })) as CallToolResult;
      expect(texts(next)[0]).toBe("ran: after");

      // The ledger shows the ticks call ended cancelled (cut off by the abort), not ok after its 60 ticks.
      const row = await nextRow("ticks", before);
      expect(row).toEqual({ outcome: "cancelled", duration_ms: expect.any(Number) });
      // Its line on stderr: written when the call ended, read from the pipe a moment later.
      await until("the cancelled line on stderr", () =>
        server.stderr().includes("ticks: cancelled by the client (cancelled)"),
      );
    },
    SLOW,
  );

  test(
    "an extension that drops out (approval revoked) leaves the list: the client is told, and its tool answers inactive",
    async () => {
      const operator = Broker.open({ ...envOptions(), home, log: silentLogger });
      try {
        expect(operator.registry.revoke("hooker")).toBe(true);
      } finally {
        await operator.close();
      }
      const result = (await server.client.callTool({
        name: "run",
        arguments: { text: "still here" },
      })) as CallToolResult;
      // hooker's tool_result hook is gone with it: no context line any more.
      expect(texts(result)).toEqual(["ran: still here"]);
      const deadline = Date.now() + 30_000; // a guard: the notification is the event waited on
      while (server.listChanged.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(server.listChanged).toHaveLength(1);
      expect(server.listChanged[0]!.map((t) => t.name).sort()).toEqual(WORKER.tool.map((t) => t.name).sort());

      const seen = (await server.client.callTool({ name: "seen", arguments: {} })) as CallToolResult;
      expect(seen.isError).toBe(true);
      expect(texts(seen)[0]).toMatch(
        /^inactive: The tool 'seen' belongs to 'hooker', which is inactive in this session/,
      );
    },
    SLOW,
  );

  test(
    "closing the client ends the server: session and broker closed, exit 0, nothing but MCP on stdout",
    async () => {
      const exited = once(server.child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
      await server.client.close();
      const [code, signal] = await exited;
      expect({ code, signal }).toEqual({ code: 0, signal: null });
      // It left on stdin's end, not on the SIGTERM the transport sends 2 s later.
      expect(server.stderr()).toContain("tether mcp: the client closed stdin; closing session 's1'");
      expect(server.errors).toEqual([]);
      expect(query("select closed_at from sessions where id = 's1'")).toEqual([{ closed_at: expect.any(Number) }]);
    },
    SLOW,
  );
});

describe("tether mcp with a guard, stopped by SIGTERM", () => {
  test(
    "guard blocks `rm -rf` with its reason as a tool error; SIGTERM closes the session and the broker, exit 0",
    async () => {
      const guarded = await startServer(guardedHome, workspace);
      try {
        const { tools } = await guarded.client.listTools();
        expect(tools.map((t) => t.name).sort()).toEqual(WORKER.tool.map((t) => t.name).sort()); // guard serves hooks and commands, no tools

        const blocked = (await guarded.client.callTool({
          name: "run",
          arguments: { text: "clean up: rm -rf /" },
        })) as CallToolResult;
        expect(blocked.isError).toBe(true);
        expect(texts(blocked)).toHaveLength(1);
        expect(texts(blocked)[0]).toMatch(
          /^blocked: Blocked by 'guard': guard: the arguments to 'run' contain `rm -rf`, which this workspace does not allow; delete specific files by name/,
        );
        const fine = (await guarded.client.callTool({
          name: "run",
          arguments: { text: "rm notes.txt" },
        })) as CallToolResult;
        expect(texts(fine)).toEqual(["ran: rm notes.txt"]);

        const exited = once(guarded.child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
        guarded.child.kill("SIGTERM");
        const [code, signal] = await exited;
        expect({ code, signal }).toEqual({ code: 0, signal: null });
        expect(guarded.stderr()).toContain("tether mcp: SIGTERM; closing session 's1'");
        expect(guarded.errors).toEqual([]);
        expect(queryIn(guardedHome, "select closed_at from sessions where id = 's1'")).toEqual([
          { closed_at: expect.any(Number) },
        ]);
      } finally {
        await guarded.client.close().catch(() => {});
      }
    },
    SLOW,
  );
});

describe("tether mcp usage", () => {
  test(
    "without --session, or with a bad id or workspace: exit 2, a clear message on stderr, nothing on stdout, no home made",
    async () => {
      const untouched = join(root, "untouched");
      const mcp = (...args: string[]) =>
        execa(process.execPath, [BIN, "mcp", "--home", untouched, ...args], {
          cwd: REPO,
          stdin: "ignore",
          reject: false,
          timeout: 60_000,
        });
      const [bare, badId, noFolder] = await Promise.all([
        mcp(),
        mcp("--session", "no spaces"),
        mcp("--session", "s1", "--workspace", join(root, "missing")),
      ]);
      for (const run of [bare, badId, noFolder]) {
        expect(run.exitCode).toBe(2);
        expect(run.stdout).toBe("");
      }
      expect(bare.stderr).toContain("tether mcp: missing --session <id>");
      expect(badId.stderr).toContain("tether mcp: --session 'no spaces': expected a session id");
      expect(noFolder.stderr).toContain("': not a folder");
      expect(existsSync(untouched)).toBe(false);
    },
    SLOW,
  );
});
