/**
 * Tether's MCP server engine (broker/mcp/protocol/): what the SDK's `Server`
 * did for `tether mcp`, without the SDK — initialize's version negotiation,
 * errors by code, cancellation (never answered), notifications on their
 * request's stream, and the stdio framing with its bounds.
 */
import { PassThrough } from "node:stream";
import * as sdkTypes from "@modelcontextprotocol/sdk/types.js";
import { McpFailure } from "../../broker/mcp/mcp-failure.js";
import { MAX_REQUESTS_IN_FLIGHT, McpEngine } from "../../broker/mcp/protocol/engine.js";
import { BoundedLines } from "../../broker/mcp/protocol/lines.js";
import { StdioTransport } from "../../broker/mcp/protocol/stdio.js";
import type { Transport, TransportSendOptions } from "../../broker/mcp/protocol/transport.js";
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "../../broker/mcp/protocol/versions.js";
import { LOGGING_LEVELS } from "../../broker/mcp/protocol/methods.js";

interface Sent {
  readonly message: Record<string, unknown>;
  readonly options: TransportSendOptions | undefined;
}

/** A transport whose every send is recorded; `deliver` hands the engine a message. */
function fakeTransport(sessionId?: string) {
  const sent: Sent[] = [];
  const transport: Transport & { deliver(message: unknown): void } = {
    ...(sessionId !== undefined ? { sessionId } : {}),
    start: async () => {},
    send: async (message, options) => {
      sent.push({ message: message as Record<string, unknown>, options });
    },
    close: async () => transport.onclose?.(),
    deliver: (message) => transport.onmessage?.(message as never),
  };
  return { transport, sent };
}

const EVERY_CAPABILITY = { tools: {}, prompts: {}, resources: {}, completions: {}, logging: {} };

const settle = () => new Promise((resolve) => setImmediate(resolve));

async function connected(capabilities: ConstructorParameters<typeof McpEngine>[1]["capabilities"] = { tools: {} }) {
  const engine = new McpEngine({ name: "tether", version: "1.2.3" }, { capabilities, instructions: "use me" });
  const errors: string[] = [];
  engine.onerror = (err) => errors.push(err.message);
  const { transport, sent } = fakeTransport();
  await engine.connect(transport);
  return { engine, transport, sent, errors };
}

const request = (id: number | string, method: string, params?: unknown) => ({
  jsonrpc: "2.0",
  id,
  method,
  ...(params !== undefined ? { params } : {}),
});

test("the supported protocol versions are the SDK's own (an SDK upgrade that changes them fails here)", () => {
  expect(SUPPORTED_PROTOCOL_VERSIONS).toEqual(sdkTypes.SUPPORTED_PROTOCOL_VERSIONS);
  expect(LATEST_PROTOCOL_VERSION).toBe(sdkTypes.LATEST_PROTOCOL_VERSION);
  expect(LOGGING_LEVELS).toEqual(sdkTypes.LoggingLevelSchema.options);
});

describe("initialize", () => {
  const init = (protocolVersion: unknown) =>
    request(1, "initialize", { protocolVersion, capabilities: {}, clientInfo: { name: "c", version: "1" } });

  test.each(SUPPORTED_PROTOCOL_VERSIONS)("a supported version (%s) is echoed", async (version) => {
    const { transport, sent } = await connected();
    transport.deliver(init(version));
    await settle();
    expect(sent).toEqual([
      {
        message: {
          jsonrpc: "2.0",
          id: 1,
          result: {
            protocolVersion: version,
            capabilities: { tools: {} },
            serverInfo: { name: "tether", version: "1.2.3" },
            instructions: "use me",
          },
        },
        options: undefined,
      },
    ]);
  });

  test("an unsupported version is answered with the latest; no instructions, none said", async () => {
    const engine = new McpEngine({ name: "t", version: "0" }, { capabilities: { logging: {} } });
    const { transport, sent } = fakeTransport();
    await engine.connect(transport);
    transport.deliver(init("1999-01-01"));
    await settle();
    expect(sent[0]?.message["result"]).toEqual({
      protocolVersion: LATEST_PROTOCOL_VERSION,
      capabilities: { logging: {} },
      serverInfo: { name: "t", version: "0" },
    });
  });

  test("params that fail its schema are -32602 naming the member", async () => {
    const { transport, sent } = await connected();
    transport.deliver(request(2, "initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: {} }));
    await settle();
    expect(sent[0]?.message).toMatchObject({
      id: 2,
      error: { code: -32602, message: expect.stringContaining("params.clientInfo.name") },
    });
  });

  test("a request before initialize is answered as any other; notifications/initialized is told", async () => {
    const { engine, transport, sent } = await connected();
    let initialized = 0;
    engine.oninitialized = () => initialized++;
    engine.setRequestHandler("tools/list", () => ({ tools: [] }));
    transport.deliver(request(1, "tools/list"));
    transport.deliver(request(2, "ping"));
    transport.deliver({ jsonrpc: "2.0", method: "notifications/initialized" });
    await settle();
    expect(sent.map((s) => s.message)).toEqual([
      { jsonrpc: "2.0", id: 1, result: { tools: [] } },
      { jsonrpc: "2.0", id: 2, result: {} },
    ]);
    expect(initialized).toBe(1);
  });
});

describe("errors", () => {
  test("an unknown method, or one with no handler here, is -32601", async () => {
    const { transport, sent } = await connected();
    transport.deliver(request(1, "nope/nothing"));
    transport.deliver(request(2, "resources/list"));
    await settle();
    expect(sent.map((s) => s.message)).toEqual([
      { jsonrpc: "2.0", id: 1, error: { code: -32601, message: "Method not found" } },
      { jsonrpc: "2.0", id: 2, error: { code: -32601, message: "Method not found" } },
    ]);
  });

  test.each([
    ["tools/call", {}, "params.name"],
    ["tools/call", { name: "x", arguments: [1] }, "params.arguments"],
    ["tools/call", { name: "x", task: { ttl: "1" } }, "params.task.ttl"],
    ["prompts/get", { name: "p", arguments: { a: 1 } }, "params.arguments.a"],
    ["completion/complete", { ref: { type: "ref/other" }, argument: { name: "a", value: "" } }, "params.ref.type"],
    ["resources/read", { uri: 5 }, "params.uri"],
    ["logging/setLevel", { level: "loud" }, "params.level"],
    ["tools/list", { cursor: 1 }, "params.cursor"],
  ])("%s with %j is -32602 naming %s; the handler never runs", async (method, params, field) => {
    const { engine, transport, sent } = await connected(EVERY_CAPABILITY);
    let ran = false;
    const handler = () => {
      ran = true;
      return {};
    };
    engine.setRequestHandler(method as "tools/call", handler);
    transport.deliver(request(7, method, params));
    await settle();
    expect(ran).toBe(false);
    expect(sent[0]?.message).toMatchObject({ id: 7, error: { code: -32602, message: expect.stringContaining(field) } });
  });

  test("a handler's McpFailure is answered with its code, message and data as they are; anything else -32603", async () => {
    const { engine, transport, sent } = await connected();
    engine.setRequestHandler("tools/call", (params) => {
      if (params.name === "failure") throw new McpFailure(-32002, "Resource not found: 'x'", { uri: "x" });
      if (params.name === "error") throw new TypeError("it broke");
      if (params.name === "coded") throw Object.assign(new Error("coded"), { code: "ENOENT" });
      throw "a string";
    });
    for (const [id, name] of ["failure", "error", "coded", "string"].entries())
      transport.deliver(request(id + 1, "tools/call", { name }));
    await settle();
    expect(sent.map((s) => s.message["error"])).toEqual([
      { code: -32002, message: "Resource not found: 'x'", data: { uri: "x" } },
      { code: -32603, message: "it broke" },
      { code: -32603, message: "coded" },
      { code: -32603, message: "Internal error" },
    ]);
  });

  test("what is no JSON-RPC message, a response and a bad cancel are said (onerror) and never answered", async () => {
    const { transport, sent, errors } = await connected();
    transport.deliver([request(1, "ping")]);
    transport.deliver({ ...request(2, "ping"), extra: true });
    transport.deliver({ jsonrpc: "1.0", id: 3, method: "ping" });
    transport.deliver({ jsonrpc: "2.0", id: 4.5, method: "ping" });
    transport.deliver({ jsonrpc: "2.0", id: 5, method: "ping", params: [1] });
    // As the SDK's envelope: a progress token not a string or an integer makes the message none.
    transport.deliver({ jsonrpc: "2.0", id: 6, method: "ping", params: { _meta: { progressToken: 1.5 } } });
    transport.deliver({ jsonrpc: "2.0", id: 9, result: {} });
    transport.deliver({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: {} } });
    transport.deliver({ jsonrpc: "2.0", method: "notifications/whatever", params: { a: 1 } });
    await settle();
    expect(sent).toEqual([]);
    expect(errors).toHaveLength(8);
    expect(errors[6]).toMatch(/response for an unknown message ID/);
  });
});

describe("cancellation and close", () => {
  /** A tools/call handler that waits until released, recording each call's signal. */
  async function waiting() {
    const setup = await connected({ tools: {}, logging: {} });
    const signals = new Map<string, AbortSignal>();
    const release = new Map<string, () => void>();
    setup.engine.setRequestHandler("tools/call", async (params, extra) => {
      signals.set(params.name, extra.signal);
      await new Promise<void>((resolve) => release.set(params.name, resolve));
      await extra.sendNotification({
        method: "notifications/message",
        params: { level: "info", data: `${params.name} done` },
      });
      return { content: [{ type: "text", text: params.name }] };
    });
    return { ...setup, signals, release };
  }

  test("notifications/cancelled aborts that request only, with its reason; it is never answered", async () => {
    const { transport, sent, signals, release } = await waiting();
    transport.deliver(request(0, "tools/call", { name: "a" }));
    transport.deliver(request("b", "tools/call", { name: "b" }));
    await settle();
    transport.deliver({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 0, reason: "bored" } });
    expect(signals.get("a")?.aborted).toBe(true);
    expect(signals.get("a")?.reason).toBe("bored");
    expect(signals.get("b")?.aborted).toBe(false);
    release.get("a")?.();
    release.get("b")?.();
    await settle();
    // The cancelled one's notification and answer are dropped; the other's go out, the notification on its stream.
    expect(sent).toEqual([
      {
        message: { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "b done" } },
        options: { relatedRequestId: "b" },
      },
      { message: { jsonrpc: "2.0", id: "b", result: { content: [{ type: "text", text: "b" }] } }, options: undefined },
    ]);
  });

  test("close aborts every request in flight; none is answered, onclose is told, sending then fails", async () => {
    const { engine, sent, signals, release, transport } = await waiting();
    let closed = 0;
    engine.onclose = () => closed++;
    transport.deliver(request(1, "tools/call", { name: "a" }));
    await settle();
    await engine.close();
    expect(signals.get("a")?.aborted).toBe(true);
    expect(closed).toBe(1);
    release.get("a")?.();
    await settle();
    expect(sent).toEqual([]);
    await expect(engine.sendToolListChanged()).rejects.toThrow("Not connected");
  });

  test("a second connect is refused; after close the engine connects again", async () => {
    const { engine } = await connected();
    await expect(engine.connect(fakeTransport().transport)).rejects.toThrow(/Already connected/);
    await engine.close();
    await expect(engine.connect(fakeTransport().transport)).resolves.toBeUndefined();
  });
});

describe("notifications out", () => {
  test("a handler needs its capability declared, as the SDK's server says; logging answers setLevel itself", async () => {
    const { engine, transport, sent } = await connected({ tools: {}, logging: {} });
    expect(() => engine.setRequestHandler("resources/read", () => ({ contents: [] }))).toThrow(/resources/);
    expect(() => engine.setRequestHandler("prompts/list", () => ({ prompts: [] }))).toThrow(/prompts/);
    transport.deliver(request(1, "logging/setLevel", { level: "error" }));
    await settle();
    expect(sent[0]?.message).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
  });

  test("list_changed needs its capability, as the SDK's server says", async () => {
    const { engine, sent } = await connected({ tools: { listChanged: true }, prompts: {} });
    await engine.sendToolListChanged();
    await engine.sendPromptListChanged();
    await expect(engine.sendResourceListChanged()).rejects.toThrow(/resources/);
    expect(sent.map((s) => s.message)).toEqual([
      { jsonrpc: "2.0", method: "notifications/tools/list_changed" },
      { jsonrpc: "2.0", method: "notifications/prompts/list_changed" },
    ]);
  });

  test("a handler is given its request's id, _meta and the transport's session", async () => {
    const engine = new McpEngine({ name: "t", version: "0" }, { capabilities: { tools: {} } });
    const { transport } = fakeTransport("session-1");
    await engine.connect(transport);
    const seen: unknown[] = [];
    engine.setRequestHandler("tools/call", (_params, extra) => {
      seen.push([extra.requestId, extra._meta, extra.sessionId]);
      return { content: [] };
    });
    transport.deliver(request(3, "tools/call", { name: "x", _meta: { progressToken: "p", other: 1 } }));
    await settle();
    expect(seen).toEqual([[3, { progressToken: "p", other: 1 }, "session-1"]]);
  });
});

describe("stdio: newline-delimited JSON, bounded", () => {
  async function stdio(maxLineBytes = 1024) {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const engine = new McpEngine({ name: "t", version: "0" }, { capabilities: {} });
    const errors: string[] = [];
    engine.onerror = (err) => errors.push(err.message);
    await engine.connect(new StdioTransport(stdin, stdout, maxLineBytes));
    const out: string[] = [];
    let rest = "";
    stdout.on("data", (chunk: Buffer) => {
      const lines = (rest + chunk.toString("utf8")).split("\n");
      rest = lines.pop()!;
      out.push(...lines);
    });
    return { engine, stdin, out, errors };
  }

  test("one message a line, in chunks that split lines anywhere; \\r\\n too", async () => {
    const { stdin, out } = await stdio();
    const text = `${JSON.stringify(request(1, "ping"))}\r\n${JSON.stringify(request(2, "ping"))}\n`;
    for (const part of [text.slice(0, 5), text.slice(5, 40), text.slice(40)]) stdin.write(part);
    await settle();
    await settle();
    expect(out.map((line) => JSON.parse(line))).toEqual([
      { jsonrpc: "2.0", id: 1, result: {} },
      { jsonrpc: "2.0", id: 2, result: {} },
    ]);
  });

  test("a line that is not JSON, or past the JSON bounds, is said and skipped; the next is served", async () => {
    const { stdin, out, errors } = await stdio(1 << 20);
    stdin.write("not json\n");
    stdin.write(`${"[".repeat(100)}${"]".repeat(100)}\n`);
    stdin.write(`${JSON.stringify(request(3, "ping"))}\n`);
    await settle();
    await settle();
    expect(out.map((line) => JSON.parse(line))).toEqual([{ jsonrpc: "2.0", id: 3, result: {} }]);
    expect(errors).toHaveLength(2);
    expect(errors[1]).toMatch(/nested deeper than 64/);
  });

  test("a request past the JSON bounds is answered -32602 for its id, read without parsing it", async () => {
    const { stdin, out } = await stdio(1 << 20);
    const deep = `${"[".repeat(1000)}${"]".repeat(1000)}`;
    stdin.write(
      `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"e","arguments":{"a":${deep}}},"id":"x\\"y"}\n`,
    );
    stdin.write(`{"id": 12, "params": {"id": 5, "deep": ${deep}}, "method": "tools/call", "jsonrpc": "2.0"}\n`);
    // Not a request (no method), or no id to answer: nothing is sent.
    stdin.write(`{"jsonrpc":"2.0","id":13,"result":${deep}}\n`);
    stdin.write(`{"jsonrpc":"2.0","method":"m","params":${deep}}\n`);
    stdin.write(`{"jsonrpc":"2.0","method":"m","id":1.5,"params":${deep}}\n`);
    await settle();
    await settle();
    const error = { code: -32602, message: expect.stringContaining("nested deeper than 64 levels") };
    expect(out.map((line) => JSON.parse(line))).toEqual([
      { jsonrpc: "2.0", id: 'x"y', error },
      { jsonrpc: "2.0", id: 12, error },
    ]);
  });

  test("a line past the byte bound is refused as it is read, skipped to its newline, and the next is served", async () => {
    const { engine, stdin, out, errors } = await stdio(100);
    let closed = false;
    engine.onclose = () => (closed = true);
    // Over several chunks, none with a newline until the end: never held whole.
    for (let i = 0; i < 10; i++) stdin.write(`"${"x".repeat(60)}`);
    stdin.write(`"\n${JSON.stringify(request(4, "ping"))}\n`);
    // Past the bound within one chunk, its newline in the same chunk.
    stdin.write(`${JSON.stringify({ ...request(5, "ping"), params: { _meta: { pad: "y".repeat(200) } } })}\n`);
    stdin.write(`${JSON.stringify(request(6, "ping"))}\n`);
    await settle();
    await settle();
    expect(out.map((line) => JSON.parse(line).id)).toEqual([4, 6]);
    expect(errors).toEqual([expect.stringMatching(/longer than 100 bytes/), expect.stringMatching(/longer than 100/)]);
    expect(closed).toBe(false);
  });

  test("BoundedLines holds no more than its bound of an unfinished line", () => {
    const lines: string[] = [];
    let tooLong = 0;
    const reader = new BoundedLines(
      8,
      (bytes) => lines.push(bytes.toString()),
      () => tooLong++,
    );
    reader.push(Buffer.from("12345678\n123456789"));
    reader.push(Buffer.from("more\nab"));
    reader.push(Buffer.from("c\n\n"));
    expect(lines).toEqual(["12345678", "abc", ""]);
    expect(tooLong).toBe(1);
  });
});

test("a client's requests past MAX_REQUESTS_IN_FLIGHT open at once are answered busy at once; one ending makes room", async () => {
  const { engine, transport, sent } = await connected();
  const release: Array<() => void> = [];
  engine.setRequestHandler("tools/list", () => new Promise((resolve) => release.push(() => resolve({ tools: [] }))));
  for (let id = 1; id <= MAX_REQUESTS_IN_FLIGHT + 2; id++) transport.deliver(request(id, "tools/list"));
  await settle();
  const busy = sent.filter((s) => (s.message["error"] as { code?: number } | undefined)?.code === -32001);
  expect(busy.map((s) => s.message["id"])).toEqual([MAX_REQUESTS_IN_FLIGHT + 1, MAX_REQUESTS_IN_FLIGHT + 2]);
  expect((busy[0]!.message["error"] as { message: string }).message).toBe(
    `busy: this client has ${MAX_REQUESTS_IN_FLIGHT} requests open; wait for one to end`,
  );
  // Pings are requests too, and wait their turn the same way.
  transport.deliver(request("p", "ping"));
  await settle();
  expect(sent.at(-1)?.message["id"]).toBe("p");
  expect(sent.at(-1)?.message["error"]).toBeDefined();
  release.shift()!();
  await settle();
  transport.deliver(request("q", "ping"));
  await settle();
  expect(sent.at(-1)?.message).toEqual({ jsonrpc: "2.0", id: "q", result: {} });
  for (const r of release) r();
  await settle();
  expect(sent.filter((s) => "result" in s.message && s.message["id"] !== "q")).toHaveLength(MAX_REQUESTS_IN_FLIGHT);
});
