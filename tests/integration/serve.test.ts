/**
 * `tether serve` through the real binary (`node bin/tether.js serve`, a fresh
 * home with the hook-bus fixtures worker and hooker installed and approved):
 * JSON-RPC 2.0 over a WebSocket, on a loopback port (port 0: the start line
 * says which) and on a Unix socket. Real satellites answer every call.
 *
 * One server serves most tests (each on its own session); the transport,
 * token-file and shutdown tests start their own.
 */
import { spawn, type ChildProcess } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { WebSocket } from "ws";
import { Broker } from "../../broker/broker.js";
import { readManifest } from "../../broker/install/manifest.js";
import { silentLogger } from "../../broker/base/log.js";
import { REPO } from "../support/satellites.js";
import { envOptions } from "../support/env-options.js";

const BIN = join(REPO, "bin", "tether.js");
const FIXTURES = join(REPO, "tests/integration/fixtures/bus");
const WORKER = readManifest(join(FIXTURES, "worker"));
const HOOKER = readManifest(join(FIXTURES, "hooker"));
const SLOW = 120_000;

// ── the server process ────────────────────────────────────────────────────

interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  readonly tokenFile: string;
  readonly startLine: string;
  stdout(): string;
  stderr(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface Ended {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function spawnServe(
  home: string,
  args: string[],
  ownGroup = false,
): {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
} {
  const child = spawn(process.execPath, [BIN, "serve", "--home", home, ...args], {
    cwd: REPO,
    env: { ...process.env, TETHER_HOME: home },
    stdio: ["ignore", "pipe", "pipe"],
    // A process group of its own, as a terminal or systemd gives it: a group-wide signal reaches only it.
    detached: ownGroup,
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, out: () => out, err: () => err, exited };
}

/** Starts `tether serve` and waits for its start line. */
async function serve(home: string, ...args: string[]): Promise<Served> {
  return serveIn(false, home, ...args);
}

async function serveIn(ownGroup: boolean, home: string, ...args: string[]): Promise<Served> {
  const s = spawnServe(home, args, ownGroup);
  const started = Date.now();
  for (;;) {
    const line = /^tether serve: listening on (\S+) \(token file: (.+)\)$/m.exec(s.out());
    if (line !== null)
      return {
        child: s.child,
        url: line[1]!,
        tokenFile: line[2]!,
        startLine: line[0],
        stdout: s.out,
        stderr: s.err,
        exited: s.exited,
      };
    if (s.child.exitCode !== null || Date.now() - started > 30_000) {
      s.child.kill("SIGKILL");
      throw new Error(
        `tether serve did not start (exit ${String(s.child.exitCode)}):\n${s.out()}\n--- stderr ---\n${s.err()}`,
      );
    }
    await sleep(50);
  }
}

/** Runs `tether serve` expecting it to stop on its own (it refused to start). */
async function serveFails(home: string, ...args: string[]): Promise<Ended> {
  const s = spawnServe(home, args);
  const timer = setTimeout(() => s.child.kill("SIGKILL"), 30_000);
  const { code } = await s.exited;
  clearTimeout(timer);
  return { code, stdout: s.out(), stderr: s.err() };
}

async function stop(served: Served): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (served.child.exitCode === null && served.child.signalCode === null) served.child.kill("SIGTERM");
  return served.exited;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The tool calls of `session` in the server's ledger, in order, once none is still running: [name, outcome]. */
async function ledgerOutcomes(session: string): Promise<Array<[string, string]>> {
  const db = new Database(join(home, "tether.db"), { readonly: true });
  try {
    const rows = () =>
      db
        .prepare("select name, outcome from invocations where session_id = ? and kind = 'tool' order by id")
        .all(session) as Array<{ name: string; outcome: string }>;
    await until(`the ledger to finish session ${session}'s calls`, () => rows().every((r) => r.outcome !== "running"));
    return rows().map((r) => [r.name, r.outcome]);
  } finally {
    db.close();
  }
}

async function until(what: string, test: () => boolean, ms = 20_000): Promise<void> {
  const started = Date.now();
  while (!test()) {
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

// ── a JSON-RPC client ─────────────────────────────────────────────────────

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Message = any;

function token(served: Served): string {
  return readFileSync(served.tokenFile, "utf8").trim();
}

/** Connects with these headers: the open socket, or the HTTP status the upgrade was refused with. */
function attempt(
  url: string,
  headers: Record<string, string>,
): Promise<{ ws: WebSocket } | { status: number } | { error: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.once("open", () => resolve({ ws }));
    ws.once("unexpected-response", (_req, res) => {
      resolve({ status: res.statusCode ?? 0 });
      res.resume();
      ws.terminate();
    });
    ws.once("error", (err) => resolve({ error: (err as NodeJS.ErrnoException).code ?? err.message }));
  });
}

class Client {
  /** Every message received, in order. */
  readonly received: Message[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  #next = 0;

  constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => this.received.push(JSON.parse(data.toString("utf8"))));
    ws.on("error", () => {}); // a connection the server cut off; `closed` says how
    this.closed = new Promise((resolve) =>
      ws.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  static async connect(served: Served): Promise<Client> {
    const got = await attempt(served.url, { Authorization: `Bearer ${token(served)}` });
    if (!("ws" in got)) throw new Error(`could not connect: ${JSON.stringify(got)}`);
    return new Client(got.ws);
  }

  send(message: unknown): void {
    this.ws.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  /** Sends a request; its id. */
  start(method: string, params?: unknown, id: string | number = ++this.#next): string | number {
    this.send({ jsonrpc: "2.0", id, method, ...(params !== undefined ? { params } : {}) });
    return id;
  }

  /** The answer to request `id` (a response: result or error). */
  async answer(id: string | number | null, ms = 30_000): Promise<Message> {
    await until(
      `the answer to ${JSON.stringify(id)}`,
      () => this.received.some((m) => m.id === id && ("result" in m || "error" in m)),
      ms,
    );
    return this.received.find((m) => m.id === id && ("result" in m || "error" in m));
  }

  async call(method: string, params?: unknown): Promise<Message> {
    return this.answer(this.start(method, params));
  }

  /** The result of a call that must succeed. */
  async result(method: string, params?: unknown): Promise<Message> {
    const answer = await this.call(method, params);
    if (!("result" in answer)) throw new Error(`${method} failed: ${JSON.stringify(answer.error)}`);
    return answer.result;
  }

  partials(id: string | number): string[] {
    return this.received
      .filter((m) => m.method === "tool.partial" && m.params.id === id)
      .map((m) => m.params.text as string);
  }

  close(): void {
    this.ws.close();
  }
}

function textOf(outcome: Message): string {
  if (!outcome.ok) return `error ${outcome.error.code}: ${outcome.error.msg}`;
  return (outcome.value.content as Message[])
    .map((c) => (c.type === "text" ? c.text : JSON.stringify(c.json)))
    .join(" | ");
}

// ── the shared server ─────────────────────────────────────────────────────

let root: string;
let home: string;
let workspace: string;
let server: Served;
const clients: Client[] = [];

async function client(served = server): Promise<Client> {
  const c = await Client.connect(served);
  clients.push(c);
  return c;
}

async function openSession(c: Client, id: string): Promise<Message> {
  return c.result("session.open", { id, workspace });
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "tether-serve-"));
  home = join(root, "home");
  workspace = join(root, "workspace");
  mkdirSync(workspace);
  const broker = Broker.open({ ...envOptions(), home, log: silentLogger });
  try {
    for (const name of ["worker", "hooker"]) {
      await broker.registry.install(join(FIXTURES, name));
      broker.registry.approve(name);
    }
  } finally {
    await broker.close();
  }
  server = await serve(home, "--port", "0");
}, SLOW);

afterAll(async () => {
  for (const c of clients) c.ws.terminate();
  if (server !== undefined) await stop(server);
  rmSync(root, { recursive: true, force: true });
}, SLOW);

describe("tether serve on a loopback port", () => {
  test("the first run creates the token file 0600 (32 random bytes, hex); the start line names the address and the file", () => {
    expect(server.tokenFile).toBe(join(home, "serve.token"));
    expect(statSync(server.tokenFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(server.tokenFile, "utf8")).toMatch(/^[0-9a-f]{64}\n$/);
    expect(server.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).not.toBe("ws://127.0.0.1:0");
    // Extension pages on another port: never the console's origin.
    const pages =
      /^tether serve: extension pages are at (http:\/\/127\.0\.0\.1:(\d+))\/ext\/<name>\/… \(the same token\)$/m.exec(
        server.stdout(),
      );
    expect(pages).not.toBeNull();
    expect(pages![1]).not.toBe(server.url.replace(/^ws:/, "http:"));
    expect(Number(pages![2])).toBeGreaterThan(0);
  });

  test("an upgrade without the token, or with a wrong one, is refused 401 with no socket, while an authorised client's call runs on", async () => {
    const a = await client();
    await openSession(a, "auth");
    const call = a.start("tool.call", { session: "auth", tool: "ticks", arguments: { n: 6 } });
    const good = token(server);
    const flipped = `${good.slice(0, -1)}${good.endsWith("0") ? "1" : "0"}`; // same length, last byte differs
    const refused = await Promise.all([
      attempt(server.url, {}),
      attempt(server.url, { Authorization: "Bearer wrong" }),
      attempt(server.url, { Authorization: `Bearer ${flipped}` }),
      attempt(server.url, { Authorization: `Basic ${good}` }),
      attempt(server.url, { Authorization: `Bearer ${good}x` }),
    ]);
    expect(refused).toEqual([{ status: 401 }, { status: 401 }, { status: 401 }, { status: 401 }, { status: 401 }]);

    const answer = await a.answer(call);
    expect(textOf(answer.result.outcome)).toBe("ticked 6");
    expect(a.partials(call)).toEqual(["tick 1", "tick 2", "tick 3", "tick 4", "tick 5", "tick 6"]);
    expect((await a.result("session.status", { session: "auth" })).map((s: Message) => s.name)).toContain("worker");
  });

  test("session.open boots the session; tools come with extension, description and JSON Schema; status and commands", async () => {
    const a = await client();
    const opened = await openSession(a, "listing");
    expect(opened).toMatchObject({ id: "listing", workspace, policy: {}, already_open: false });
    const states = Object.fromEntries(opened.extensions.map((s: Message) => [s.name, s.state]));
    expect(states).toEqual({ worker: "active", hooker: "active", hooks: "disabled" });

    const tools = await a.result("session.tools", { session: "listing" });
    const expected = [
      ...WORKER.tool.map((t) => ({
        name: t.name,
        extension: "worker",
        description: t.description,
        parameters: t.parameters,
      })),
      ...HOOKER.tool.map((t) => ({
        name: t.name,
        extension: "hooker",
        description: t.description,
        parameters: t.parameters,
      })),
    ];
    expect(tools).toEqual(expected);
    expect(tools.find((t: Message) => t.name === "ticks").parameters).toEqual({
      type: "object",
      properties: { n: { type: "integer", minimum: 1, maximum: 1000 } },
      required: ["n"],
    });

    expect(await a.result("session.commands", { session: "listing" })).toEqual([
      { name: "echo", extension: "worker", description: WORKER.command[0]!.description, arguments: [] },
      { name: "flag", extension: "hooker", description: HOOKER.command[0]!.description, arguments: [] },
    ]);
    const status = await a.result("session.status", { session: "listing" });
    expect(status.map((s: Message) => `${s.name}:${s.state}`)).toEqual([
      "worker:active",
      "hooker:active",
      "hooks:disabled",
    ]);

    // Sessions are the server's: another client finds it; another workspace under the same id is refused.
    const b = await client();
    expect(await b.result("session.open", { id: "listing", workspace })).toMatchObject({
      id: "listing",
      already_open: true,
    });
    const conflict = await b.call("session.open", { id: "listing", workspace: root });
    expect(conflict.error).toMatchObject({ code: -32004, data: { code: "session_conflict" } });
  });

  test("tool.call streams tool.partial notifications (id = the request's) in order, then the report", async () => {
    const a = await client();
    await openSession(a, "partials");
    const id = a.start(
      "tool.call",
      { session: "partials", tool: "ticks", arguments: { n: 5 }, call_id: "c-5" },
      "ticks-5",
    );
    const answer = await a.answer(id);
    const mine = a.received.filter((m) => m.id === id || m.params?.id === id);
    expect(mine.map((m) => (m.method === "tool.partial" ? m.params.text : "result" in m ? "RESULT" : "OTHER"))).toEqual(
      ["tick 1", "tick 2", "tick 3", "tick 4", "tick 5", "RESULT"],
    );
    expect(mine.slice(0, 5).every((m) => m.jsonrpc === "2.0" && !("id" in m))).toBe(true);
    expect(answer.result).toMatchObject({
      outcome: { ok: true, value: { content: [{ type: "text", text: "ticked 5" }], terminate: false } },
      extension: "worker",
      call_id: "c-5",
      arguments: { n: 5 },
      blocked_by: null,
      partials_dropped: 0,
      context: ["hooker saw ticks end ok=true"],
    });
    expect(answer.result.trace.map((t: Message) => `${t.extension}:${t.answer}`)).toEqual([
      "hooker:proceed",
      "hooker:context",
    ]);
    expect(typeof answer.result.invocation_id).toBe("number");
  });

  test("tool failures are results, not JSON-RPC errors: a hook's block, bad arguments, an unknown tool", async () => {
    const a = await client();
    await openSession(a, "failures");
    const blocked = await a.result("tool.call", {
      session: "failures",
      tool: "run",
      arguments: { text: "rm -rf /", hook: "block" },
    });
    expect(blocked).toMatchObject({
      outcome: { ok: false, error: { code: "blocked", msg: "Blocked by 'hooker': hooker: rm -rf is not allowed" } },
      blocked_by: "hooker",
    });
    const bad = await a.result("tool.call", { session: "failures", tool: "ticks", arguments: { n: "many" } });
    expect(bad.outcome).toMatchObject({ ok: false, error: { code: "bad_arguments" } });
    const unknown = await a.result("tool.call", { session: "failures", tool: "nope", arguments: {} });
    expect(unknown.outcome).toMatchObject({ ok: false, error: { code: "unknown_tool" } });
  });

  test("call.cancel ends a running call cancelled; the satellite keeps serving", async () => {
    const a = await client();
    await openSession(a, "cancel");
    const id = a.start("tool.call", { session: "cancel", tool: "ticks", arguments: { n: 1000 } }, "long");
    await until("a first partial", () => a.partials(id).length > 0);
    expect(await a.result("call.cancel", { id: "long" })).toEqual({ cancelled: true });
    const answer = await a.answer(id);
    // Cut off by the cancel (a call that ran on would end `ticked 1000`, or at its deadline), with ticks still to go.
    expect(answer.result.outcome).toEqual({ ok: false, error: { code: "cancelled", msg: "Cancelled by the caller" } });
    expect(await a.result("call.cancel", { id: "long" })).toEqual({ cancelled: false }); // no longer in flight
    expect(
      textOf(
        (await a.result("tool.call", { session: "cancel", tool: "run", arguments: { text: "still here" } })).outcome,
      ),
    ).toBe("ran: still here");
  });

  test("a client that goes away has its calls cancelled (the session's queue is free again at once)", async () => {
    const gone = await client();
    await openSession(gone, "gone");
    const id = gone.start("tool.call", { session: "gone", tool: "ticks", arguments: { n: 1000 } });
    await until("a first partial", () => gone.partials(id).length > 0);
    gone.ws.terminate();
    // The worker's satellite takes one call at a time: this one waits (up to the 5 s deadline) unless that call was cancelled.
    const other = await client();
    const run = await other.result("tool.call", { session: "gone", tool: "run", arguments: { text: "next" } });
    expect(textOf(run.outcome)).toBe("ran: next");
    // The queue was freed by the cancel, not by the deadline: the ledger says the gone client's call ended cancelled.
    expect(await ledgerOutcomes("gone")).toEqual([
      ["ticks", "cancelled"],
      ["run", "ok"],
    ]);
  });

  test("session.fire returns the composed verdict of the session's hooks", async () => {
    const a = await client();
    await openSession(a, "events");
    const blocked = await a.result("session.fire", {
      session: "events",
      event: "before_agent_start",
      payload: { prompt: "something forbidden" },
    });
    expect(blocked).toMatchObject({
      block: { reason: "hooker: that prompt is forbidden", by: "hooker" },
      halt: null,
      rewrite: null,
      result: null,
      context: [],
      messages: null,
    });
    expect(blocked.trace).toEqual([
      expect.objectContaining({ extension: "hooker", answer: "block", detail: "hooker: that prompt is forbidden" }),
    ]);

    const read = await a.result("session.fire", {
      session: "events",
      event: "before_agent_start",
      payload: { prompt: "hello" },
    });
    expect(read).toMatchObject({
      block: null,
      context: ["hooker read: hello"],
      notes: ["hooker looked at the prompt"],
    });

    const started = await a.result("session.fire", {
      session: "events",
      event: "session_start",
      payload: { source: "startup" },
    });
    expect(started.context).toEqual(["hooker saw session events start (startup)"]);

    const transformed = await a.result("session.fire", {
      session: "events",
      event: "context",
      payload: { messages: [{ role: "user", content: "hi" }] },
    });
    expect(transformed.messages).toEqual([
      { role: "user", content: "hi" },
      { role: "system", content: "hooker was here" },
    ]);

    const compact = await a.result("session.fire", {
      session: "events",
      event: "before_compact",
      payload: { reason: "requested" },
    });
    expect(compact.compact_text).toBe("hooker: keep the user's name (requested)");
  });

  test("command.run runs a /command; an unknown one is a result too", async () => {
    const a = await client();
    await openSession(a, "commands");
    expect(await a.result("command.run", { session: "commands", line: "/echo hello world" })).toEqual({
      extension: "worker",
      outcome: { ok: true, value: { content: [{ type: "text", text: "echo: hello world" }], terminate: false } },
      partials_dropped: 0,
    });
    const unknown = await a.result("command.run", { session: "commands", line: "/nope" });
    expect(unknown).toMatchObject({ extension: null, outcome: { ok: false, error: { code: "unknown_tool" } } });
  });

  test("malformed JSON, invalid requests, unknown methods and invalid params are errors; the connection and other clients carry on", async () => {
    const a = await client();
    const b = await client();
    await openSession(a, "errors");

    a.send("{not json");
    await until("the parse error", () => a.received.some((m) => m.error?.code === -32700));
    expect(a.received.find((m) => m.error?.code === -32700)).toMatchObject({
      jsonrpc: "2.0",
      id: null,
      error: { data: { code: "parse_error" } },
    });

    a.send({ jsonrpc: "1.0", id: "old", method: "session.status", params: { session: "errors" } });
    expect((await a.answer("old")).error).toMatchObject({ code: -32600, data: { code: "invalid_request" } });
    a.send({ jsonrpc: "2.0", id: "nomethod" });
    expect((await a.answer("nomethod")).error).toMatchObject({ code: -32600 });

    expect((await a.call("session.nope", {})).error).toMatchObject({ code: -32601, data: { code: "unknown_method" } });

    const noTool = await a.call("tool.call", { session: "errors", arguments: {} });
    expect(noTool.error).toMatchObject({ code: -32602, data: { code: "bad_arguments", field: "tool" } });
    expect(noTool.error.message).toContain("tool");
    expect((await a.call("tool.call", { session: "not a valid id!", tool: "run" })).error).toMatchObject({
      code: -32602,
      data: { field: "session" },
    });
    expect((await a.call("tool.call", { session: "errors", tool: "run", argumentz: {} })).error).toMatchObject({
      code: -32602,
      data: { field: "argumentz" },
    });
    expect(
      (await a.call("session.fire", { session: "errors", event: "before_agent_start", payload: { prompt: 5 } })).error,
    ).toMatchObject({
      code: -32602,
      data: { code: "bad_arguments", field: "payload.prompt" },
    });
    expect((await a.call("session.fire", { session: "errors", event: "route_call", payload: {} })).error).toMatchObject(
      {
        code: -32602,
        data: { field: "event" },
      },
    );
    // tool_call is the harness's about its own tools: its payload is checked like any event's.
    expect((await a.call("session.fire", { session: "errors", event: "tool_call", payload: {} })).error).toMatchObject({
      code: -32602,
      data: { field: "payload.tool" },
    });
    expect((await a.call("session.open", { id: "rel", workspace: "relative/dir" })).error).toMatchObject({
      code: -32602,
      data: { field: "workspace" },
    });
    expect((await a.call("session.status", { session: "never-opened" })).error).toMatchObject({
      code: -32002,
      data: { code: "unknown_session" },
    });

    // A notification is never answered, not even with an error; a batch gets an array.
    a.send({ jsonrpc: "2.0", method: "session.nope" });
    a.send([
      { jsonrpc: "2.0", id: "b1", method: "session.commands", params: { session: "errors" } },
      { jsonrpc: "2.0", id: "b2", method: "session.nope" },
    ]);
    await until("the batch answer", () => a.received.some((m) => Array.isArray(m)));
    const batch: Message = a.received.find((m) => Array.isArray(m));
    expect(batch.map((m: Message) => [m.id, "result" in m ? "result" : m.error.code])).toEqual([
      ["b1", "result"],
      ["b2", -32601],
    ]);
    expect(a.received.filter((m) => !Array.isArray(m) && m.id === null)).toHaveLength(1); // only the parse error's

    expect(await a.result("session.commands", { session: "errors" })).toHaveLength(2);
    expect((await b.result("session.open", { id: "errors-b", workspace })).extensions.length).toBeGreaterThan(0);
    expect(
      textOf((await b.result("tool.call", { session: "errors-b", tool: "run", arguments: { text: "fine" } })).outcome),
    ).toBe("ran: fine");
  });

  test(
    "a connection may have 32 requests in flight: the 33rd is answered busy; cancel still works, others are not held",
    async () => {
      const c = await client();
      const other = await client();
      await openSession(c, "bound");
      const ids = Array.from({ length: 32 }, (_, i) =>
        c.start("tool.call", { session: "bound", tool: "ticks", arguments: { n: 1000 } }, `t${i}`),
      );
      const extra = c.start("session.status", { session: "bound" }, "extra");
      const refused = await c.answer(extra);
      expect(refused.error).toMatchObject({ code: -32001, data: { code: "busy" } });
      expect(c.received.filter((m) => ids.includes(m.id))).toEqual([]); // all 32 still in flight
      expect((await other.result("session.status", { session: "bound" })).length).toBe(3);

      // An id already in flight is refused as invalid, not confused with the running call.
      c.start("session.status", { session: "bound" }, "t0");
      await until("the duplicate's answer", () => c.received.some((m) => m.id === "t0"));
      expect(c.received.filter((m) => m.id === "t0")).toEqual([
        expect.objectContaining({
          error: expect.objectContaining({ code: -32600, message: expect.stringContaining("already in flight") }),
        }),
      ]);

      for (const id of ids) expect(await c.result("call.cancel", { id })).toEqual({ cancelled: true });
      await until("every call's report", () => ids.every((id) => c.received.some((m) => m.id === id && "result" in m)));
      const answers = ids.map((id) => c.received.find((m) => m.id === id && "result" in m));
      expect(answers.map((a) => a.result.outcome.error.code)).toEqual(ids.map(() => "cancelled"));
      expect((await c.result("session.status", { session: "bound" })).length).toBe(3);
    },
    SLOW,
  );

  test(
    "a client that stops reading is disconnected once 16 MiB wait for it; other clients are not disturbed",
    async () => {
      const slow = await client();
      const fine = await client();
      await openSession(slow, "slow");
      slow.ws.pause();
      // Batches of 30 (under the in-flight bound), ~45 KB of answers each, until the server gives up on it.
      const batch = JSON.stringify(
        Array.from({ length: 30 }, (_, i) => ({
          jsonrpc: "2.0",
          id: i,
          method: "session.tools",
          params: { session: "slow" },
        })),
      );
      const cutOff = () => server.stderr().includes("disconnecting a client that is not reading");
      let sent = 0;
      while (!cutOff() && sent < 4000 && slow.ws.readyState === WebSocket.OPEN) {
        // Paced by the socket: the next batch goes once this one is written out.
        await new Promise<void>((sent) => slow.ws.send(batch, () => sent()));
        sent++;
      }
      await until("the server to cut the slow client off", cutOff, 30_000);
      expect(await fine.result("session.status", { session: "slow" })).toHaveLength(3);
      slow.ws.resume();
      const closed = await slow.closed;
      expect(closed.code).toBe(1006); // terminated: no close frame queued behind what it did not read
      const batches = slow.received.filter((m) => Array.isArray(m)).length;
      expect(batches).toBeLessThan(sent);
      expect(sent * 45_000).toBeGreaterThan(16 * 1024 * 1024); // it was cut off only after more than the mark was asked for
    },
    SLOW,
  );
});

describe("tether serve on a Unix socket, and shutting down", () => {
  test(
    "the socket is 0600; SIGTERM stops accepting, lets the call in flight finish, exits 0 and removes the socket",
    async () => {
      const dir = mkdtempSync(join(root, "s-"));
      const sock = join(dir, "t.sock");
      const tokenFile = join(dir, "other.token");
      const s = await serve(home, "--socket", sock, "--token-file", tokenFile);
      expect(s.url).toBe(`ws+unix:${sock}`);
      expect(s.tokenFile).toBe(tokenFile);
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      expect(lstatSync(sock).isSocket()).toBe(true);
      expect(lstatSync(sock).mode & 0o777).toBe(0o600);
      // Extension pages on a socket of their own beside it, never the API's.
      const pagesSock = join(dir, "t-pages.sock");
      await until("the pages line", () => s.stdout().includes("extension pages are at"));
      expect(s.stdout()).toContain(
        `tether serve: extension pages are at http+unix:${pagesSock}/ext/<name>/… (the same token)`,
      );
      expect(lstatSync(pagesSock).mode & 0o777).toBe(0o600);
      expect(await attempt(s.url, { Authorization: `Bearer ${token(server)}` })).toEqual({ status: 401 }); // the other server's token

      const c = await client(s);
      await openSession(c, "drain");
      const id = c.start("tool.call", { session: "drain", tool: "ticks", arguments: { n: 20 } });
      await until("a first partial", () => c.partials(id).length > 0);
      s.child.kill("SIGTERM");
      await until("the shutdown to begin", () => s.stderr().includes("shutting down;"));
      expect(c.received.some((m) => m.id === id)).toBe(false); // signalled mid-call

      const late = await c.call("session.status", { session: "drain" });
      expect(late.error).toMatchObject({ code: -32003, data: { code: "shutting_down" } });
      expect(await attempt(s.url, { Authorization: `Bearer ${token(s)}` })).toEqual({
        error: expect.stringMatching(/^(ENOENT|ECONNREFUSED)$/),
      });

      const answer = await c.answer(id);
      expect(textOf(answer.result.outcome)).toBe("ticked 20");
      expect(c.partials(id)).toHaveLength(20);
      expect(await c.closed).toEqual({ code: 1001, reason: "tether serve is shutting down" });
      expect(await s.exited).toEqual({ code: 0, signal: null });
      expect(existsSync(sock)).toBe(false);
      expect(existsSync(pagesSock)).toBe(false);
      expect(s.stderr()).toMatch(/shutting down; 1 request\(s\) in flight/);
      expect(s.stderr()).toMatch(/tether serve: stopped\n$/);
    },
    SLOW,
  );

  test(
    "a signal to the whole process group (Ctrl-C, systemd) drains too: satellites are not in the group, the call in flight finishes",
    async () => {
      const dir = mkdtempSync(join(root, "s-"));
      const s = await serveIn(true, home, "--socket", join(dir, "t.sock"));
      const c = await client(s);
      await openSession(c, "group");
      const id = c.start("tool.call", { session: "group", tool: "ticks", arguments: { n: 20 } });
      await until("a first partial", () => c.partials(id).length > 0);
      process.kill(-s.child.pid!, "SIGINT");
      const answer = await c.answer(id);
      expect(textOf(answer.result.outcome)).toBe("ticked 20");
      expect(await s.exited).toEqual({ code: 0, signal: null });
    },
    SLOW,
  );

  test(
    "a second signal stops waiting: the call in flight is cancelled, the session destroyed, and the server still exits 0",
    async () => {
      const dir = mkdtempSync(join(root, "s-"));
      const s = await serve(home, "--socket", join(dir, "t.sock"));
      const c = await client(s);
      await openSession(c, "hurry");
      const id = c.start("tool.call", { session: "hurry", tool: "ticks", arguments: { n: 1000 } });
      await until("a first partial", () => c.partials(id).length > 0);
      s.child.kill("SIGINT");
      await until("the shutdown to begin", () => s.stderr().includes("shutting down;"));
      s.child.kill("SIGINT");
      const answer = await c.answer(id);
      // Cancelled by the second signal: not drained to `ticked 1000`, nor ended by the call's deadline.
      expect(answer.result.outcome).toMatchObject({ ok: false, error: { code: "cancelled" } });
      expect(await s.exited).toEqual({ code: 0, signal: null });
      expect(s.stderr()).toContain("SIGINT again: not waiting any longer");
      expect(s.stderr()).toMatch(/tether serve: stopped \(requests or sessions were cut short\)\n$/);
    },
    SLOW,
  );

  test(
    "refuses a socket something listens on, and a path that is not a socket; replaces a stale socket",
    async () => {
      const dir = mkdtempSync(join(root, "s-"));
      const sock = join(dir, "t.sock");
      const first = await serve(home, "--socket", sock);
      const [second, plain] = await Promise.all([
        serveFails(home, "--socket", sock),
        (async () => {
          const file = join(dir, "plain");
          writeFileSync(file, "not a socket");
          return { ...(await serveFails(home, "--socket", file)), kept: () => readFileSync(file, "utf8") };
        })(),
      ]);
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(`Something is already listening on ${sock}`);
      expect(plain.code).toBe(1);
      expect(plain.stderr).toContain("exists and is not a socket");
      expect(plain.kept()).toBe("not a socket");

      const c = await client(first); // the first one is undisturbed
      expect((await c.call("session.status", { session: "nobody" })).error).toMatchObject({
        data: { code: "unknown_session" },
      });

      first.child.kill("SIGKILL"); // dies without removing its socket
      await first.exited;
      expect(lstatSync(sock).isSocket()).toBe(true);
      const third = await serve(home, "--socket", sock);
      const d = await client(third);
      expect((await d.result("session.open", { id: "after-stale", workspace })).id).toBe("after-stale");
      expect(await stop(third)).toEqual({ code: 0, signal: null });
      expect(existsSync(sock)).toBe(false);
    },
    SLOW,
  );

  test(
    "refuses a token file group or other may read, and bad usage",
    async () => {
      const dir = mkdtempSync(join(root, "t-"));
      const loose = join(dir, "loose.token");
      writeFileSync(loose, `${"a".repeat(64)}\n`);
      chmodSync(loose, 0o640);
      const sock = join(dir, "t.sock");
      const [perms, both, port, samePages, pagesOnSocket, badPages] = await Promise.all([
        serveFails(home, "--socket", sock, "--token-file", loose),
        serveFails(home, "--socket", sock, "--port", "0"),
        serveFails(home, "--port", "70000"),
        serveFails(home, "--port", "47999", "--pages-port", "47999"),
        serveFails(home, "--socket", sock, "--pages-port", "0"),
        serveFails(home, "--port", "0", "--pages-port", "x"),
      ]);
      expect([samePages.code, samePages.stderr]).toEqual([
        2,
        expect.stringContaining(
          "--pages-port must differ from --port: extension pages never share the console's origin",
        ),
      ]);
      expect([pagesOnSocket.code, pagesOnSocket.stderr]).toEqual([
        2,
        expect.stringContaining("--pages-port goes with --port"),
      ]);
      expect([badPages.code, badPages.stderr]).toEqual([
        2,
        expect.stringContaining("--pages-port takes a port number 0-65535 (0 picks a free one), not 'x'"),
      ]);
      expect(perms.code).toBe(1);
      expect(perms.stderr).toContain(`The token file ${loose} has mode 640`);
      expect(perms.stderr).toContain(`chmod 600 ${loose}`);
      expect(perms.stdout).toBe("");
      expect(existsSync(sock)).toBe(false);
      expect(both.code).toBe(2);
      expect(both.stderr).toContain("--socket and --port do not combine");
      expect(port.code).toBe(2);
    },
    SLOW,
  );
});
