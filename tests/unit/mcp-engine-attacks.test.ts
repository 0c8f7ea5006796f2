/**
 * Tether's MCP engine (broker/mcp/protocol/) under hostile or odd input: what
 * a client sends reaches the handlers as it was sent (as the SDK's `Server`
 * gave it), and the stdio framing holds no more memory than its bound.
 */
import { PassThrough } from "node:stream";
import { McpEngine } from "../../broker/mcp/protocol/engine.js";
import { BoundedLines } from "../../broker/mcp/protocol/lines.js";
import { requestIdOf } from "../../broker/mcp/protocol/salvage.js";
import { StdioTransport } from "../../broker/mcp/protocol/stdio.js";
import { createMcpServer } from "../../broker/mcp/server.js";
import type { Session } from "../../broker/sessions/session.js";
import type { Transport } from "../../broker/mcp/protocol/transport.js";
import { memoryInUse } from "./support/memory-in-use.js";

function fakeTransport() {
  const sent: Record<string, unknown>[] = [];
  const transport: Transport & { deliver(message: unknown): void } = {
    start: async () => {},
    send: async (message) => {
      sent.push(message as Record<string, unknown>);
    },
    close: async () => transport.onclose?.(),
    deliver: (message) => transport.onmessage?.(message as never),
  };
  return { transport, sent };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

const request = (id: number | string, method: string, params?: unknown) => ({
  jsonrpc: "2.0",
  id,
  method,
  ...(params !== undefined ? { params } : {}),
});

describe("arguments reach the handler as the client sent them", () => {
  // Keys that name Object.prototype's members (or valibot's reserved ones) are arguments like any other.
  const ARGUMENTS =
    '{"constructor":"a","prototype":"b","toString":"c","hasOwnProperty":"d","__proto__":{"x":1},"ok":1}';

  test("tools/call: constructor and prototype are kept; __proto__ is dropped (as the SDK's zod drops it)", async () => {
    const engine = new McpEngine({ name: "t", version: "0" }, { capabilities: { tools: {}, prompts: {} } });
    const seen: unknown[] = [];
    engine.setRequestHandler("tools/call", (params) => {
      seen.push(params.arguments);
      return { content: [] };
    });
    engine.setRequestHandler("prompts/get", (params) => {
      seen.push(params.arguments);
      return { messages: [] };
    });
    const { transport, sent } = fakeTransport();
    await engine.connect(transport);
    transport.deliver(
      JSON.parse(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":${ARGUMENTS}}}`),
    );
    transport.deliver(
      JSON.parse(
        '{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p","arguments":{"constructor":"a","prototype":"b"}}}',
      ),
    );
    await settle();
    expect(sent.map((m) => m["id"])).toEqual([1, 2]);
    expect(sent.every((m) => m["error"] === undefined)).toBe(true);
    const [tool, prompt] = seen as Record<string, unknown>[];
    expect(Object.keys(tool!)).toEqual(["constructor", "prototype", "toString", "hasOwnProperty", "ok"]);
    expect(JSON.stringify(tool)).toBe('{"constructor":"a","prototype":"b","toString":"c","hasOwnProperty":"d","ok":1}');
    expect(Object.getPrototypeOf(tool)).toBe(Object.prototype);
    expect(prompt).toEqual({ constructor: "a", prototype: "b" });
  });

  test("prompts/get: a prompt argument that is no string is -32602 naming it, whatever its name", async () => {
    const engine = new McpEngine({ name: "t", version: "0" }, { capabilities: { prompts: {} } });
    engine.setRequestHandler("prompts/get", () => ({ messages: [] }));
    const { transport, sent } = fakeTransport();
    await engine.connect(transport);
    transport.deliver(request(1, "prompts/get", { name: "p", arguments: { constructor: 5 } }));
    transport.deliver(request(2, "prompts/get", { name: "p", arguments: { a: "x", b: [] } }));
    transport.deliver(request(3, "prompts/get", { name: "p", arguments: ["x"] }));
    await settle();
    expect(sent.map((m) => [m["id"], (m["error"] as { code: number; message: string }).code])).toEqual([
      [1, -32602],
      [2, -32602],
      [3, -32602],
    ]);
    expect((sent[0]!["error"] as { message: string }).message).toMatch(/params\.arguments\.constructor/);
    expect((sent[1]!["error"] as { message: string }).message).toMatch(/params\.arguments\.b/);
  });
});

describe("stdio framing: memory", () => {
  test("an unfinished line sent a byte at a time holds about its bytes, not an object per chunk", () => {
    const max = 1 << 20;
    const lines: number[] = [];
    let tooLong = 0;
    const reader = new BoundedLines(
      max,
      (bytes) => lines.push(bytes.length),
      () => tooLong++,
    );
    const before = memoryInUse();
    const byte = Buffer.from("x");
    for (let i = 0; i < max; i++) reader.push(byte);
    const held = memoryInUse() - before;
    // The bound is a megabyte: a few of them at most, not a hundred.
    expect(held).toBeLessThan(4 * max);
    reader.push(Buffer.from("\n"));
    expect(lines).toEqual([max]);
    expect(tooLong).toBe(0);
  });
});

describe("prompts/get: argument names are looked up as the client's own members only", () => {
  test("a declared argument named as an Object.prototype member, left out, is empty (not that member)", async () => {
    const ran: string[] = [];
    const session = {
      id: "s",
      context: () => [],
      routes: () => [],
      tools: () => [],
      revision: () => 0,
      onChange: () => () => {},
      commands: () => [
        {
          name: "c",
          description: "a command",
          arguments: [
            { name: "first", required: false, choices: [] },
            { name: "constructor", required: false, choices: [] },
            { name: "toString", required: false, choices: [] },
          ],
        },
      ],
      runCommand: async (text: string) => {
        ran.push(text);
        return { outcome: { ok: true, value: { content: [{ type: "text", text }] } } };
      },
    } as unknown as Session;
    const server = createMcpServer(session, { version: "0" });
    const { transport, sent } = fakeTransport();
    await server.connect(transport);
    transport.deliver(request(1, "prompts/get", { name: "c" }));
    transport.deliver(request(2, "prompts/get", { name: "c", arguments: { first: "a", constructor: "b" } }));
    await settle();
    await settle();
    expect(sent.map((m) => m["error"] ?? "ok")).toEqual(["ok", "ok"]);
    expect(ran).toEqual(["/c", "/c a b"]);
  });
});

describe("salvage: the id of a request past the JSON bounds is the one JSON.parse would read", () => {
  const deep = `${"[".repeat(100)}${"]".repeat(100)}`;
  test.each([
    ['{"method":"m","id":1,"i\\u0064":2,"p":DEEP}', 2],
    ['{"method":"m","\\u0069d":"a","p":DEEP}', "a"],
    ['{"\\u006dethod":"m","id":3,"p":DEEP}', 3],
    ['{"method":"m","id":4,"i\\u0064":null,"p":DEEP}', undefined],
    ['{"method":"m","id":5,"p":DEEP,"id":6}', 6],
    ['{"method":"m","id":7,"p":{"id":8,"q":DEEP}}', 7],
    ['{"method":"m","p":"\\"id\\":9","q":DEEP}', undefined],
    ['{"result":{"method":"m"},"id":10,"q":DEEP}', undefined],
    // Numbers JSON reads as safe integers, however written; others are no id.
    ['{"method":"m","id":1.0,"p":DEEP}', 1],
    ['{"method":"m","id":1e2,"p":DEEP}', 100],
    ['{"method":"m","id":25E-1,"p":DEEP}', undefined],
    ['{"method":"m","id":-0,"p":DEEP}', -0],
    ['{"method":"m","id":1.5,"p":DEEP}', undefined],
    ['{"method":"m","id":1e400,"p":DEEP}', undefined],
    ['{"method":"m","id":12345678901234567890,"p":DEEP}', undefined],
    ['{"method":"m","id":9007199254740991,"p":DEEP}', 9007199254740991],
  ])("%s", (template, id) => {
    const text = template.replace("DEEP", deep);
    expect(requestIdOf(text)).toBe(id);
    // The reference: JSON.parse's reading of the same text, for the ids it can hold.
    const parsed = JSON.parse(text) as { id?: unknown; method?: unknown };
    const isId = typeof parsed.id === "string" || Number.isSafeInteger(parsed.id);
    expect(parsed.method !== undefined && isId ? parsed.id : undefined).toBe(id);
  });
});

describe("stdio framing: the line bound", () => {
  /** A ping of exactly `bytes` bytes. */
  const ping = (id: number, bytes: number) => {
    const bare = JSON.stringify({ ...request(id, "ping"), params: { _meta: { pad: "" } } });
    return JSON.stringify({ ...request(id, "ping"), params: { _meta: { pad: "x".repeat(bytes - bare.length) } } });
  };

  test("a line exactly at the bound is served whether its newline is \\n or \\r\\n; one byte more is refused", async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const engine = new McpEngine({ name: "t", version: "0" }, { capabilities: {} });
    const errors: string[] = [];
    engine.onerror = (err) => errors.push(err.message);
    await engine.connect(new StdioTransport(stdin, stdout, 100));
    const out: string[] = [];
    stdout.on("data", (chunk: Buffer) => out.push(...chunk.toString("utf8").split("\n").filter(Boolean)));
    expect(Buffer.byteLength(ping(1, 100))).toBe(100);
    stdin.write(`${ping(1, 100)}\n${ping(2, 100)}\r\n${ping(3, 101)}\n${ping(4, 101)}\r\n${ping(5, 100)}\r\r\n`);
    stdin.write(ping(6, 100));
    stdin.write("\r");
    stdin.write("\n");
    await settle();
    expect(out.map((line) => (JSON.parse(line) as { id: number }).id)).toEqual([1, 2, 6]);
    expect(errors).toEqual(Array(3).fill(expect.stringMatching(/longer than 100 bytes/)));
  });
});
