/**
 * `tether serve`'s pieces in this process, where a client's back-pressure can be
 * set exactly: a Connection over a fake socket (partials dropped and counted
 * past the high-water mark, a client cut off past the close mark), the token
 * file and the bearer check, params checks and the error mapping.
 * tests/integration/serve.test.ts drives the real binary end to end.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TetherError } from "../../broker/base/errors.js";
import { silentLogger } from "../../broker/base/log.js";
import type { ToolCallReport } from "../../broker/sessions/session.js";
import {
  Connection,
  DEFAULT_LIMITS,
  type ClientSocket,
  type Handler,
  type RequestContext,
} from "../../broker/serve/connection.js";
import { RpcFailure, checkParams, checkPayload, reportToWire, toRpcError } from "../../broker/serve/protocol.js";
import { TokenFileError, bearerMatches, loadOrCreateToken } from "../../broker/base/serve-token.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Message = any;

class FakeSocket implements ClientSocket {
  readyState = 1;
  bufferedAmount = 0;
  readonly sent: Message[] = [];
  terminated = false;
  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }
  close(): void {
    this.readyState = 3;
  }
  terminate(): void {
    this.terminated = true;
    this.readyState = 3;
  }
}

/** A handler whose calls report `partials` partials, then wait for `release` (or the signal). */
function fakeHandler(
  partials: number,
  onPartial?: (i: number) => void,
): Handler & { release(): void; signals: AbortSignal[] } {
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const signals: AbortSignal[] = [];
  return {
    accepting: true,
    began() {},
    ended() {},
    signals,
    release: () => release(),
    async handle(_method: string, _params: unknown, ctx: RequestContext) {
      signals.push(ctx.signal);
      for (let i = 1; i <= partials; i++) {
        onPartial?.(i);
        ctx.partial(`p${i}`);
      }
      await Promise.race([gate, new Promise((resolve) => ctx.signal.addEventListener("abort", resolve))]);
      return { dropped: ctx.dropped(), aborted: ctx.signal.aborted };
    },
  } as Handler & { release(): void; signals: AbortSignal[] };
}

const call = (id: number | string) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tool.call", params: { session: "s", tool: "t" } });

describe("a connection's back-pressure", () => {
  test("partials past the high-water mark are dropped and counted; the ones before it are sent in order", async () => {
    const socket = new FakeSocket();
    // The client stops reading after the second partial: the queue jumps past the mark.
    const handler = fakeHandler(5, (i) => (socket.bufferedAmount = i > 2 ? DEFAULT_LIMITS.partialHighWater + 1 : 0));
    const connection = new Connection(socket, handler, DEFAULT_LIMITS, silentLogger);
    const done = connection.receive(call(7));
    handler.release();
    await done;
    expect(socket.sent).toEqual([
      { jsonrpc: "2.0", method: "tool.partial", params: { id: 7, text: "p1" } },
      { jsonrpc: "2.0", method: "tool.partial", params: { id: 7, text: "p2" } },
      { jsonrpc: "2.0", id: 7, result: { dropped: 3, aborted: false } },
    ]);
    expect(connection.partialsDropped).toBe(3);
    expect(socket.terminated).toBe(false); // below the close mark: the answer itself is still sent
  });

  test("past the close mark the client is cut off instead of sent more, and its calls are cancelled", async () => {
    const socket = new FakeSocket();
    const handler = fakeHandler(0);
    const connection = new Connection(socket, handler, DEFAULT_LIMITS, silentLogger);
    const first = connection.receive(call(1));
    const second = connection.receive(call(2));
    expect(connection.inFlight).toBe(2);
    socket.bufferedAmount = DEFAULT_LIMITS.closeHighWater + 1;
    connection.send({ jsonrpc: "2.0", method: "tool.partial", params: { id: 1, text: "x" } });
    expect(socket.terminated).toBe(true);
    expect(socket.sent).toEqual([]);
    await Promise.all([first, second]);
    expect(handler.signals.map((s) => s.aborted)).toEqual([true, true]);
    expect(connection.inFlight).toBe(0);
  });

  test("a notification is run but never answered; call.cancel is answered even at the in-flight bound", async () => {
    const socket = new FakeSocket();
    const handler = fakeHandler(1);
    const connection = new Connection(socket, handler, { ...DEFAULT_LIMITS, maxInFlight: 1 }, silentLogger);
    const note = connection.receive(
      JSON.stringify({ jsonrpc: "2.0", method: "tool.call", params: { session: "s", tool: "t" } }),
    );
    expect(connection.inFlight).toBe(1);
    await connection.receive(call(3));
    expect(socket.sent).toEqual([
      expect.objectContaining({ id: 3, error: expect.objectContaining({ code: -32001, data: { code: "busy" } }) }),
    ]);
    await connection.receive(JSON.stringify({ jsonrpc: "2.0", id: 4, method: "call.cancel", params: { id: 99 } }));
    expect(socket.sent[1]).toEqual({ jsonrpc: "2.0", id: 4, result: { cancelled: false } });
    handler.release();
    await note;
    expect(socket.sent).toHaveLength(2); // no partial (no id to name) and no answer for the notification
  });
});

describe("the token", () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), "tether-serve-token-"))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("created 0600 with 32 random bytes in hex, then read back as it is", () => {
    const file = join(dir, "sub", "serve.token");
    const made = loadOrCreateToken(file);
    expect(made.created).toBe(true);
    expect(made.token).toMatch(/^[0-9a-f]{64}$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(loadOrCreateToken(file)).toEqual({ token: made.token, created: false });
    expect(loadOrCreateToken(join(dir, "other.token")).token).not.toBe(made.token);
  });

  test("refused when group or other may read or write it, or when it is too short", () => {
    const loose = join(dir, "loose.token");
    writeFileSync(loose, "b".repeat(64), { mode: 0o600 });
    chmodSync(loose, 0o604);
    expect(() => loadOrCreateToken(loose)).toThrow(TokenFileError);
    expect(() => loadOrCreateToken(loose)).toThrow(`has mode 604`);
    chmodSync(loose, 0o600);
    expect(loadOrCreateToken(loose).token).toBe("b".repeat(64));
    const short = join(dir, "short.token");
    writeFileSync(short, "abc\n", { mode: 0o600 });
    expect(() => loadOrCreateToken(short)).toThrow("at least 32 characters");
    expect(readFileSync(short, "utf8")).toBe("abc\n"); // never replaced
  });

  test("the bearer check takes exactly the token", () => {
    const t = "c".repeat(64);
    expect(bearerMatches(`Bearer ${t}`, t)).toBe(true);
    expect(bearerMatches(`bearer ${t}`, t)).toBe(true);
    expect(bearerMatches(undefined, t)).toBe(false);
    expect(bearerMatches("", t)).toBe(false);
    expect(bearerMatches(t, t)).toBe(false);
    expect(bearerMatches(`Bearer ${t.slice(1)}`, t)).toBe(false);
    expect(bearerMatches(`Bearer ${t}c`, t)).toBe(false);
    expect(bearerMatches(`Bearer ${t} extra`, t)).toBe(false);
  });
});

describe("params and errors", () => {
  test("invalid params name the field", () => {
    const fail = (run: () => unknown) => {
      try {
        run();
      } catch (err) {
        return toRpcError(err);
      }
      throw new Error("did not throw");
    };
    expect(fail(() => checkParams("tool.call", { session: "s" }))).toMatchObject({
      code: -32602,
      data: { code: "bad_arguments", field: "tool" },
    });
    expect(fail(() => checkParams("session.prefer", { session: "s", extension: "x", enabled: "yes" }))).toMatchObject({
      data: { field: "enabled" },
    });
    expect(fail(() => checkParams("session.open", { id: "s", workspace: "/w", policy: { allow: [1] } }))).toMatchObject(
      { data: { field: "policy.allow.0" } },
    );
    expect(fail(() => checkParams("session.status", ["s"]))).toMatchObject({
      code: -32602,
      message: expect.stringContaining("by name"),
    });
    expect(fail(() => checkPayload("agent_end", { reply: "r", held: -1 }))).toMatchObject({
      data: { field: "payload.held" },
    });
    expect(checkParams("session.prefer", { session: "s", extension: "x", enabled: null })).toEqual({
      session: "s",
      extension: "x",
      enabled: null,
    });
  });

  test("Tether errors carry their code in data; bad arguments are invalid params; anything else is internal", () => {
    expect(toRpcError(new TetherError("not_approved", "Extension 'x' is not approved"))).toEqual({
      code: -32000,
      message: "Extension 'x' is not approved",
      data: { code: "not_approved" },
    });
    expect(toRpcError(new TetherError("closed", "Session 's' is closed"))).toMatchObject({
      code: -32000,
      data: { code: "closed" },
    });
    expect(toRpcError(new TetherError("bad_arguments", "event 'x': nope"))).toMatchObject({
      code: -32602,
      data: { code: "bad_arguments" },
    });
    expect(toRpcError(new RpcFailure(-32001, "busy", "full"))).toEqual({
      code: -32001,
      message: "full",
      data: { code: "busy" },
    });
    expect(toRpcError(new Error("boom"))).toEqual({
      code: -32603,
      message: "Internal error: boom",
      data: { code: "internal" },
    });
  });

  test("a report on the wire: snake_case, arguments as JSON, dropped partials counted and noted", () => {
    const report: ToolCallReport = {
      outcome: { ok: true, value: { content: [], terminate: false } },
      extension: "w",
      callId: "c",
      invocationId: 3,
      arguments: '{"n":1}',
      rewrittenBy: null,
      substitutedBy: null,
      blockedBy: null,
      halt: null,
      context: [],
      notes: ["n1"],
      trace: [{ extension: "h", answer: "proceed", durationMs: 1.23456, detail: "", invocationId: 2 }],
    };
    expect(reportToWire(report, 0)).toMatchObject({
      call_id: "c",
      invocation_id: 3,
      arguments: { n: 1 },
      notes: ["n1"],
      partials_dropped: 0,
      trace: [{ extension: "h", answer: "proceed", duration_ms: 1.235, detail: "", invocation_id: 2 }],
    });
    expect(reportToWire(report, 4)).toMatchObject({
      partials_dropped: 4,
      notes: ["n1", "tether serve dropped 4 partial report(s): the client was not reading them"],
    });
  });
});

describe("documents past the bounds, and answers that cannot be written", () => {
  test("a message nested 100,000 deep is -32602 naming the bound, before it is parsed; the connection keeps serving", async () => {
    const socket = new FakeSocket();
    const handler = fakeHandler(0);
    const connection = new Connection(socket, handler, DEFAULT_LIMITS, silentLogger);
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    await connection.receive(
      `{"jsonrpc":"2.0","id":1,"method":"tool.call","params":{"session":"s","tool":"t","args":${deep}}}`,
    );
    expect(socket.sent).toEqual([
      {
        jsonrpc: "2.0",
        id: null,
        error: {
          code: -32602,
          message: "Invalid params: the message is nested deeper than 64 levels (the bound for any JSON document)",
          data: { code: "bad_arguments" },
        },
      },
    ]);
    const wide = `{"jsonrpc":"2.0","id":2,"method":"tool.call","params":{"session":"s","tool":"t","args":{${Array.from({ length: 400_000 }, (_, i) => `"k${i}":0`).join(",")}}}}`;
    await connection.receive(wide);
    expect(socket.sent[1]).toMatchObject({
      id: null,
      error: {
        code: -32602,
        message: "Invalid params: the message is more than 16384 elements (the bound for any JSON document)",
      },
    });
    const ok = connection.receive(call(3));
    handler.release();
    await ok;
    expect(socket.sent[2]).toMatchObject({ id: 3, result: { aborted: false } });
  });

  test("an answer that cannot be encoded is that request's -32603, and the connection keeps serving", async () => {
    const socket = new FakeSocket();
    const handler = fakeHandler(0);
    handler.release();
    const unencodable: Handler = { ...handler, handle: async () => ({ n: 1n }) } as unknown as Handler;
    const connection = new Connection(socket, unencodable, DEFAULT_LIMITS, silentLogger);
    await connection.receive(call(1));
    expect(socket.sent[0]).toMatchObject({
      jsonrpc: "2.0",
      id: 1,
      error: {
        code: -32603,
        message: expect.stringMatching(/^The answer could not be encoded: /),
        data: { code: "internal" },
      },
    });
    await connection.receive(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "call.cancel", params: { id: 9 } }));
    expect(socket.sent[1]).toEqual({ jsonrpc: "2.0", id: 2, result: { cancelled: false } });
  });
});
