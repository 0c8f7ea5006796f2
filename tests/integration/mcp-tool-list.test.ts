/**
 * `tools/list_changed` from `tether mcp`'s server, in this process over the
 * SDK's in-memory transport: after each call the server compares the names
 * `tools/list` would show now with those the client last listed, and tells
 * the client only when they differ — a tool MCP cannot list (its schema
 * describes no object) stays out of both and announces nothing; an extension
 * that drops out (its approval revoked) is announced after the next call.
 * The server awaits the notification before it answers, so each check reads
 * what arrived by the time the call's answer did.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { type CallToolResult, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { createMcpServer } from "../../broker/mcp/server.js";
import type { HookSession } from "../support/hook-session.js";
import { openWrittenSession } from "./support/write-extensions.js";

const SLOW = 120_000;

const EXTENSIONS = {
  mixed: {
    manifest: `
[[tool]]
name = "run"
description = "Answers ran."
parameters = { type = "object", properties = { text = { type = "string" } } }

[[tool]]
name = "odd"
description = "Takes a string or a number, which no MCP call can send."
parameters = { type = ["string", "number"] }
`,
    code: `import { outcome, text, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = { run: () => outcome([text("ran")]), odd: () => outcome([text("odd")]) };
`,
  },
  other: {
    manifest: `
[[tool]]
name = "more"
description = "Answers more."
`,
    code: `import { outcome, text, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = { more: () => outcome([text("more")]) };
`,
  },
};

describe("tools/list_changed: told when the names the client listed change, and only then", () => {
  let opened: HookSession;

  afterEach(async () => {
    await opened?.close();
  });

  test(
    "calls announce nothing while the list stands (an unlistable tool included); a revoked extension is announced once",
    async () => {
      opened = await openWrittenSession("tether-mcp-tool-list-", EXTENSIONS, "t1");
      const server = createMcpServer(opened.session, { version: "0.0.0-test" });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      const client = new Client({ name: "tether-mcp-tool-list-test", version: "1.0.0" });
      let announced = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        announced += 1;
      });
      await client.connect(clientSide);

      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["run", "more"]);
      for (const name of ["run", "more", "run"]) {
        const result = (await client.callTool({ name, arguments: {} })) as CallToolResult;
        expect(result.isError).toBeUndefined();
      }
      expect(announced).toBe(0);

      expect(opened.broker.registry.revoke("other")).toBe(true);
      await client.callTool({ name: "run", arguments: {} });
      expect(announced).toBe(1);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["run"]);
      await client.callTool({ name: "run", arguments: {} });
      expect(announced).toBe(1);
      await client.close();
    },
    SLOW,
  );
});
