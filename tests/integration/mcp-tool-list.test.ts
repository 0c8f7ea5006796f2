/**
 * `tools/list_changed` and `resources/list_changed` from `tether mcp`'s
 * server, in this process over the SDK's in-memory transport: after each
 * call, once the session's active set was worked out again (its revision
 * grew), the server compares what the client last listed with what it would
 * list now, and tells the client only when they differ — a tool MCP cannot
 * list (its schema describes no object) stays out of both, so an extension
 * that serves only such a tool drops out unannounced; one whose tools or
 * resources were listed is announced after the next call. The server awaits
 * each notification before it answers, so each check reads what arrived by
 * the time the call's answer did.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import {
  type CallToolResult,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
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
  hidden: {
    manifest: `
[[tool]]
name = "odder"
description = "Also takes what no MCP call can send."
parameters = { type = ["string", "number"] }
`,
    code: `import { outcome, text, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = { odder: () => outcome([text("odder")]) };
`,
  },
  docs: {
    manifest: `
[[route]]
name = "readme"
description = "The readme."
resource = { uri = "docs://readme", mime_type = "text/markdown" }
`,
    code: `import type { Route } from "@tether/ext";
export const tools = {};
export const routes: Record<string, Route> = { readme: () => "# Readme" };
`,
  },
};

describe("list_changed: told when what the client listed changed, and only then", () => {
  let opened: HookSession;

  afterEach(async () => {
    await opened?.close();
  });

  test(
    "calls announce nothing while the lists stand (unlistable tools included); each change is announced once",
    async () => {
      opened = await openWrittenSession("tether-mcp-tool-list-", EXTENSIONS, "t1");
      const server = createMcpServer(opened.session, { version: "0.0.0-test" });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      const client = new Client({ name: "tether-mcp-tool-list-test", version: "1.0.0" });
      const announced = { tools: 0, resources: 0 };
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        announced.tools += 1;
      });
      client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
        announced.resources += 1;
      });
      await client.connect(clientSide);
      const run = async () => {
        const result = (await client.callTool({ name: "run", arguments: {} })) as CallToolResult;
        expect(result.content).toEqual([{ type: "text", text: "ran" }]);
      };

      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["run", "more"]);
      expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(["docs://readme"]);
      await run();
      await client.callTool({ name: "more", arguments: {} });
      await run();
      expect(announced).toEqual({ tools: 0, resources: 0 });

      // The active set is worked out again, and neither list changed.
      expect(opened.broker.registry.revoke("hidden")).toBe(true);
      await run();
      expect(announced).toEqual({ tools: 0, resources: 0 });

      expect(opened.broker.registry.revoke("other")).toBe(true);
      await run();
      expect(announced).toEqual({ tools: 1, resources: 0 });
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["run"]);

      expect(opened.broker.registry.revoke("docs")).toBe(true);
      await run();
      expect(announced).toEqual({ tools: 1, resources: 1 });
      await run();
      expect(announced).toEqual({ tools: 1, resources: 1 });
      await client.close();
    },
    SLOW,
  );
});
