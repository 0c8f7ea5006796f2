/**
 * Tether's MCP engine against the SDK's own `Server` (1.32.2), message for
 * message: the same handlers on both, the same messages in, the same answers
 * and notifications out (and `onerror` told as often) — for everything
 * `tether mcp` serves but where the engine differs on purpose (a request
 * whose params fail its schema is -32602 here, -32603 from the SDK; a request
 * of id 0 can be cancelled here: tests/unit/mcp-engine.test.ts).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  ListToolsRequestSchema,
  type ServerNotification,
} from "@modelcontextprotocol/sdk/types.js";
import { McpFailure } from "../../broker/mcp/mcp-failure.js";
import { McpEngine } from "../../broker/mcp/protocol/engine.js";
import type { Transport } from "../../broker/mcp/protocol/transport.js";

const INFO = { name: "tether", version: "1.0.0" };
const OPTIONS = {
  capabilities: { tools: { listChanged: true }, prompts: {}, completions: {}, logging: {} },
  instructions: "how to use it",
};

/** What both servers' `tools/call` does, by the tool's name. */
async function callTool(
  name: string,
  extra: { signal: AbortSignal; sendNotification: (n: ServerNotification) => Promise<void> },
) {
  if (name === "fail") throw new McpFailure(-32002, "Resource not found: 'x'", { uri: "x" });
  if (name === "boom") throw new Error("it broke");
  if (name === "slow") await new Promise((resolve) => setTimeout(resolve, 30));
  await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: `${name} ran` } });
  return { content: [{ type: "text" as const, text: `${name}: ${extra.signal.aborted}` }] };
}

type Run = { sent: { message: unknown; options: unknown }[]; errors: number };

async function drive(server: "sdk" | "engine", messages: readonly unknown[]): Promise<Run> {
  const run: Run = { sent: [], errors: 0 };
  const transport: Transport = {
    start: async () => {},
    send: async (message, options) => {
      run.sent.push({ message, options });
    },
    close: async () => transport.onclose?.(),
  };
  if (server === "sdk") {
    const sdk = new Server(INFO, OPTIONS);
    sdk.setRequestHandler(CallToolRequestSchema, (request, extra) => callTool(request.params.name, extra));
    sdk.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
    sdk.setRequestHandler(GetPromptRequestSchema, () => {
      throw new McpFailure(-32602, "Unknown prompt 'p'");
    });
    sdk.onerror = () => run.errors++;
    await sdk.connect(transport);
  } else {
    const engine = new McpEngine(INFO, OPTIONS);
    engine.setRequestHandler("tools/call", (params, extra) => callTool(params.name, extra));
    engine.setRequestHandler("tools/list", () => ({ tools: [] }));
    engine.setRequestHandler("prompts/get", () => {
      throw new McpFailure(-32602, "Unknown prompt 'p'");
    });
    engine.onerror = () => run.errors++;
    await engine.connect(transport);
  }
  for (const message of messages) {
    if (typeof message === "number") await new Promise((resolve) => setTimeout(resolve, message));
    else transport.onmessage?.(message as never);
  }
  await new Promise((resolve) => setTimeout(resolve, 60));
  return run;
}

const request = (id: number | string, method: string, params?: unknown) => ({
  jsonrpc: "2.0",
  id,
  method,
  ...(params !== undefined ? { params } : {}),
});
const init = (id: number, protocolVersion: string) =>
  request(id, "initialize", { protocolVersion, capabilities: { roots: {} }, clientInfo: { name: "c", version: "1" } });
const cancel = (requestId: number | string) => ({
  jsonrpc: "2.0",
  method: "notifications/cancelled",
  params: { requestId, reason: "bored" },
});

/** Answers by id (the two may send them in another order), then notifications in order, and the error count. */
function seen(run: Run) {
  const byId = (m: unknown) => String((m as { id?: unknown }).id);
  const answers = run.sent.filter((s) => (s.message as { id?: unknown }).id !== undefined);
  return {
    answers: Object.fromEntries(answers.map((s) => [byId(s.message), s])),
    notifications: run.sent.filter((s) => (s.message as { id?: unknown }).id === undefined),
    errors: run.errors,
  };
}

test.each<[string, unknown[]]>([
  ["initialize with each version, and one unknown", [init(1, "2025-06-18"), init(2, "2024-10-07"), init(3, "1.0")]],
  [
    "requests before initialize, ping, initialized",
    [request(1, "tools/list"), request(2, "ping"), init(3, "2025-11-25")],
  ],
  ["unknown methods and ones not served", [request(1, "tools/nope"), request(2, "resources/list"), request("s", "x")]],
  ["a handler's errors", [request(1, "tools/call", { name: "fail" }), request(2, "tools/call", { name: "boom" })]],
  ["a prompt's McpFailure", [request(1, "prompts/get", { name: "p" })]],
  ["logging/setLevel answered by the server itself", [request(1, "logging/setLevel", { level: "warning" })]],
  [
    "notifications on their request's stream",
    [request(1, "tools/call", { name: "a" }), request("b", "tools/call", { name: "b" })],
  ],
  [
    "a cancelled request is never answered, its notifications dropped",
    [request(5, "tools/call", { name: "slow" }), 5, cancel(5), request(6, "tools/call", { name: "slow" })],
  ],
  [
    "a cancel for no open request, or for one already answered",
    [request(1, "tools/call", { name: "a" }), 5, cancel(1), cancel(99)],
  ],
  [
    "no answer to what is no request",
    [
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", method: "notifications/whatever", params: { a: 1 } },
      { jsonrpc: "2.0", id: 9, result: {} },
      { jsonrpc: "2.0", id: 9, error: { code: 1, message: "m" } },
      { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: [] } },
      { ...request(1, "ping"), extra: 1 },
      { jsonrpc: "2.0", id: 1.5, method: "ping" },
      { jsonrpc: "2.0", id: null, method: "ping" },
      { jsonrpc: "2.0", id: 2, method: "ping", params: { _meta: { progressToken: 0.5 } } },
      request(3, "ping"),
    ],
  ],
])("%s: the same as the SDK's server", async (_name, messages) => {
  const [sdk, engine] = [await drive("sdk", messages), await drive("engine", messages)];
  expect(seen(engine)).toEqual(seen(sdk));
  expect(engine.sent.length).toBeGreaterThan(0);
});
