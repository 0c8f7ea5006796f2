/**
 * `tether mcp --http`: the real binary on a loopback port, driven by the MCP
 * SDK's own Client over StreamableHTTPClientTransport (tools, prompts from
 * commands, completion, extensions' log lines as logging notifications), and
 * its gate probed by raw HTTP, class by class: every spelling of a Host that is
 * not loopback, every Origin that is not this server's, every way a token can
 * be missing or wrong, bodies past the bounds, sessions it does not know, and
 * more sessions than it holds.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema, type LoggingMessageNotification } from "@modelcontextprotocol/sdk/types.js";
import { MAX_BODY_BYTES } from "../../broker/mcp/http.js";
import { MAX_CALLS_IN_FLIGHT } from "../../broker/mcp/server.js";
import { startMcpHttp, type McpHttpChild } from "../support/mcp-http-server.js";
import {
  foreignHosts,
  foreignOrigins,
  INITIALIZE,
  loopbackHosts,
  mcpHeaders,
  ownOrigins,
  type RawRequest,
  rawRequest,
  wrongAuthorizations,
  wrongPathTokens,
} from "../support/mcp-gate-probes.js";
import { until } from "../support/wait.js";

const SLOW = 120_000;

let root: string;
let server: McpHttpChild;
let port: number;
let token: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "tether-mcp-http-"));
  server = await startMcpHttp(root, "http-1", SLOW);
  ({ port, token } = server);
}, SLOW);

afterAll(async () => {
  // SIGTERM closes every MCP session and the Tether session, and exits 0.
  expect(await server.stop()).toBe(0);
  rmSync(root, { recursive: true, force: true });
});

/** One raw request to this server. */
const raw = (options: Omit<RawRequest, "path"> & { path?: string }) =>
  rawRequest(port, { ...options, path: options.path ?? "/mcp" });
const headers = (override: Record<string, string | undefined> = {}) => mcpHeaders(port, token, override);

async function client(): Promise<Client> {
  const c = new Client({ name: "tether-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await c.connect(transport);
  return c;
}

describe("the SDK's own client over Streamable HTTP", () => {
  test("tools list and call through the session; a failure is a result with isError", async () => {
    const c = await client();
    try {
      const { tools } = await c.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([
        "test_audio_content",
        "test_embedded_resource",
        "test_error_handling",
        "test_hold",
        "test_image_content",
        "test_multiple_content_types",
        "test_simple_text",
        "test_tool_with_logging",
        "test_tool_with_progress",
      ]);
      // Media blocks reach the client as MCP shapes them.
      const mixed = await c.callTool({ name: "test_multiple_content_types", arguments: {} });
      expect((mixed.content as { type: string }[]).map((b) => b.type)).toEqual(["text", "image", "resource"]);
      expect((mixed.content as unknown[])[2]).toEqual({
        type: "resource",
        resource: {
          uri: "test://mixed-content-resource",
          mimeType: "application/json",
          text: '{"test":"data","value":123}',
        },
      });
      const ok = await c.callTool({ name: "test_simple_text", arguments: {} });
      expect(ok.content).toEqual([{ type: "text", text: "This is a simple text response for testing." }]);
      expect(ok._meta).toMatchObject({ "tether/extension": "conformance", "tether/invocation": expect.any(Number) });
      const unknown = await c.callTool({ name: "nope", arguments: {} });
      expect(unknown.isError).toBe(true);
      // Nothing served it: no extension, no ledger row, and no null-valued _meta either.
      expect(unknown._meta).toBeUndefined();
    } finally {
      await c.close();
    }
  });

  test("an extension's log lines during a call are logging notifications, at or above the client's level", async () => {
    const c = await client();
    const seen: LoggingMessageNotification["params"][] = [];
    c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      seen.push(n.params);
    });
    try {
      await c.setLoggingLevel("info");
      await c.callTool({ name: "test_tool_with_logging", arguments: {} });
      await until("three log lines", () => seen.length >= 3);
      expect(seen).toEqual(
        ["Tool execution started", "Tool processing data", "Tool execution completed"].map((data) => ({
          level: "info",
          logger: "conformance",
          data,
        })),
      );
      await c.setLoggingLevel("error");
      await c.callTool({ name: "test_tool_with_logging", arguments: {} });
      // The call's answer comes after its notifications: none were sent below the level.
      expect(seen).toHaveLength(3);
    } finally {
      await c.close();
    }
  });

  test("commands are prompts: declared arguments, values passed in order, completion from their choices", async () => {
    const c = await client();
    try {
      const { prompts } = await c.listPrompts();
      expect(prompts.filter((p) => ["test_simple_prompt", "test_prompt_with_arguments"].includes(p.name))).toEqual([
        {
          name: "test_simple_prompt",
          description: "A prompt with no arguments.",
          arguments: [{ name: "args", description: "What follows /test_simple_prompt", required: false }],
        },
        {
          name: "test_prompt_with_arguments",
          description: "A prompt that says back its two arguments.",
          arguments: [
            { name: "arg1", description: "First test argument", required: true },
            { name: "arg2", description: "Second test argument", required: true },
          ],
        },
      ]);
      const got = await c.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg2: "b", arg1: "a" } });
      expect(got.messages).toEqual([
        { role: "user", content: { type: "text", text: "Prompt with arguments: arg1='a', arg2='b'" } },
      ]);
      await expect(c.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "a" } })).rejects.toThrow(
        "Prompt 'test_prompt_with_arguments' needs arg2",
      );
      await expect(
        c.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "a", arg2: "b", arg3: "c" } }),
      ).rejects.toThrow("takes arg1, arg2; not arg3");
      await expect(c.getPrompt({ name: "nope" })).rejects.toThrow("Unknown prompt 'nope'");
      // Joined with spaces, a value holding one would fill the next argument; a blank one is not given.
      await expect(
        c.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "paris injected", arg2: "b" } }),
      ).rejects.toThrow("arg1 may not hold spaces");
      const last = await c.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "a", arg2: "b c" } });
      expect(JSON.stringify(last.messages)).toContain("arg1='a', arg2='b'");
      await expect(
        c.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: " ", arg2: " " } }),
      ).rejects.toThrow("needs arg1, arg2");
      const completed = await c.complete({
        ref: { type: "ref/prompt", name: "test_prompt_with_arguments" },
        argument: { name: "arg1", value: "pa" },
      });
      expect(completed.completion).toEqual({ values: ["paris", "park"], total: 2, hasMore: false });
    } finally {
      await c.close();
    }
  });

  test(`one client may have ${MAX_CALLS_IN_FLIGHT} calls open; the one past them is told it is busy`, async () => {
    const c = await client();
    const stop = new AbortController();
    try {
      // One more than the bound, all at once: whichever arrives last is refused at once, the rest hold.
      const calls = Array.from({ length: MAX_CALLS_IN_FLIGHT + 1 }, () =>
        c.callTool({ name: "test_hold", arguments: {} }, undefined, { signal: stop.signal }).catch((e: unknown) => e),
      );
      const first = await Promise.race(calls);
      expect(first).toMatchObject({
        isError: true,
        content: [{ type: "text", text: expect.stringContaining("busy:") }],
      });
      stop.abort();
      const settled = await Promise.all(calls);
      expect(settled.filter((r) => (r as { isError?: boolean }).isError === true)).toHaveLength(1);
      // Once they end, the client is served again.
      const again = await c.callTool({ name: "test_simple_text", arguments: {} });
      expect(again.isError).not.toBe(true);
    } finally {
      stop.abort();
      await c.close();
    }
  });
});

describe("the gate, before the SDK sees a byte", () => {
  test("every Host that is not a loopback name is refused (403); loopback names in any case are let through", async () => {
    const refused = foreignHosts(port);
    for (const host of refused) {
      const answer = await raw({ headers: headers({ host }), body: INITIALIZE });
      expect([host, answer.status]).toEqual([host, 403]);
    }
    // No Host at all: Node's HTTP server refuses an HTTP/1.1 request without one (400) before the gate.
    const missing = await raw({ headers: headers({ host: undefined }), body: INITIALIZE });
    expect(missing.status).toBe(400);
    for (const host of loopbackHosts(port)) {
      const answer = await raw({ headers: headers({ host }), body: INITIALIZE });
      expect([host, answer.status]).toEqual([host, 200]);
    }
  });

  test("every Origin but this server's own is refused (403); none, or its own, is let through", async () => {
    const refused = foreignOrigins(port);
    for (const origin of refused) {
      const answer = await raw({ headers: headers({ origin }), body: INITIALIZE });
      expect([origin, answer.status]).toEqual([origin, 403]);
    }
    for (const origin of ownOrigins(port)) {
      const answer = await raw({ headers: headers({ origin }), body: INITIALIZE });
      expect([origin, answer.status]).toEqual([origin, 200]);
    }
  });

  test("every missing or wrong token is refused (401), in the header and in the path", async () => {
    const wrongHeaders = wrongAuthorizations(token);
    for (const authorization of wrongHeaders) {
      const answer = await raw({ headers: headers({ authorization }), body: INITIALIZE });
      expect([authorization, answer.status]).toEqual([authorization, 401]);
    }
    for (const path of [...wrongPathTokens(token).map((t) => `/mcp/${t}`), `/mcp/${token}/more`]) {
      const answer = await raw({ path, headers: headers({ authorization: undefined }), body: INITIALIZE });
      expect([path, answer.status]).toEqual([path, 401]);
    }
    // The scheme's name is case-insensitive; the path token works without a header.
    expect((await raw({ headers: headers({ authorization: `bearer ${token}` }), body: INITIALIZE })).status).toBe(200);
    const byPath = await raw({
      path: `/mcp/${token}`,
      headers: headers({ authorization: undefined }),
      body: INITIALIZE,
    });
    expect(byPath.status).toBe(200);
    // Another path is not the endpoint, whatever it carries.
    for (const path of ["/", "/mcpx", `/x/mcp/${token}`])
      expect((await raw({ path, headers: headers() })).status).toBe(404);
  });

  test("bodies past the bounds and documents that are not JSON are refused before the SDK parses them", async () => {
    const tooLong = await raw({ headers: headers(), body: Buffer.alloc(MAX_BODY_BYTES + 1, 0x20) });
    expect([413, -1]).toContain(tooLong.status);
    const deep = `${"[".repeat(200)}${"]".repeat(200)}`;
    const answers = await Promise.all(
      [deep, "{", "not json", `[${"1,".repeat(20_000)}1]`].map((body) => raw({ headers: headers(), body })),
    );
    expect(answers.map((a) => a.status)).toEqual([400, 400, 400, 400]);
  });

  test("a session it does not know is 404; a request that names none and is no initialize is 400", async () => {
    const unknown = await raw({ headers: headers({ "mcp-session-id": "no-such-session" }), body: "{}" });
    expect(unknown.status).toBe(404);
    const get = await raw({ method: "GET", headers: headers() });
    expect(get.status).toBe(400);
    const notInit = await raw({ headers: headers(), body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }) });
    expect(notInit.status).toBe(400);
  });
});
