/**
 * `tools/list_changed` and `resources/list_changed` from `tether mcp`'s
 * server, in this process over the SDK's in-memory transport: after each
 * call, once the session's active set was worked out again (its revision
 * grew), the server compares what the client last listed with what it would
 * list now, and tells the client only when they differ — a tool MCP cannot
 * list (its schema describes no object) stays out of both, so an extension
 * that serves only such a tool drops out unannounced; one whose tools or
 * resources were listed is announced after the next call, also when the
 * change came while that call ran (a reload's, announced as it happens, is
 * not announced again by the next call), and each resource list is compared with
 * what the client was given of it; a route is served by the approval in force
 * whether or not its extension's satellite is up. The server awaits each
 * notification before it answers, so each check reads what arrived by the
 * time the call's answer did.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import {
  type CallToolResult,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { createMcpServer } from "../../broker/mcp/server.js";
import type { Session } from "../../broker/sessions/session.js";
import { type HookSession, openHookSession } from "../support/hook-session.js";
import { type ExtensionFiles, openWrittenSession, writeExtensions } from "./support/write-extensions.js";

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

[[tool]]
name = "work"
description = "Reports a partial, then answers worked."
`,
    code: `import { outcome, text, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = {
  run: () => outcome([text("ran")]),
  odd: () => outcome([text("odd")]),
  work: (_args, ctx) => {
    ctx.report("working");
    return outcome([text("worked")]);
  },
};
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

/** An SDK client over a fresh `tether mcp` server on `session`, counting each list_changed it is sent. */
async function connect(session: Session): Promise<{ client: Client; announced: { tools: number; resources: number } }> {
  const server = createMcpServer(session, { version: "0.0.0-test" });
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
  return { client, announced };
}

describe("list_changed: told when what the client listed changed, and only then", () => {
  let opened: HookSession;

  afterEach(async () => {
    await opened?.close();
  });

  test(
    "calls announce nothing while the lists stand (unlistable tools included); each change is announced once",
    async () => {
      opened = await openWrittenSession("tether-mcp-tool-list-", EXTENSIONS, "t1");
      const { client, announced } = await connect(opened.session);
      const run = async () => {
        const result = (await client.callTool({ name: "run", arguments: {} })) as CallToolResult;
        expect(result.content).toEqual([{ type: "text", text: "ran" }]);
      };

      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["run", "work", "more"]);
      expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(["docs://readme"]);
      await run();
      await client.callTool({ name: "more", arguments: {} });
      await run();
      expect(announced).toEqual({ tools: 0, resources: 0 });

      // The active set is worked out again, and neither list changed.
      expect(opened.broker.registry.revoke("hidden")).toBe(true);
      await run();
      expect(announced).toEqual({ tools: 0, resources: 0 });

      // Revoked while the call runs (its partial's progress notification reaches the client first).
      const revoked: boolean[] = [];
      const worked = (await client.callTool({ name: "work", arguments: {} }, undefined, {
        onprogress: () => revoked.push(opened.broker.registry.revoke("other")),
      })) as CallToolResult;
      expect(worked.content).toEqual([{ type: "text", text: "worked" }]);
      expect(revoked).toEqual([true]);
      expect(announced).toEqual({ tools: 1, resources: 0 });
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["run", "work"]);

      expect(opened.broker.registry.revoke("docs")).toBe(true);
      await run();
      expect(announced).toEqual({ tools: 1, resources: 1 });
      await run();
      expect(announced).toEqual({ tools: 1, resources: 1 });
      await client.close();
    },
    SLOW,
  );

  test(
    "a reload that changed the tools is announced once: the next call does not announce it again",
    async () => {
      opened = await openWrittenSession("tether-mcp-tool-list-", EXTENSIONS, "t2");
      const { client, announced } = await connect(opened.session);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["run", "work", "more"]);
      opened.session.prefer("other", false);
      await opened.session.reload();
      await client.callTool({ name: "run", arguments: {} });
      expect(announced.tools).toBe(1);
      await client.callTool({ name: "run", arguments: {} });
      expect(announced.tools).toBe(1);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["run", "work"]);
      await client.close();
    },
    SLOW,
  );
});

/** An extension with one tool, whose builds differ by what it answers. */
const spare = (answer: string): ExtensionFiles => ({
  manifest: `
[[tool]]
name = "spare"
description = "Answers its build."
`,
  code: `import { outcome, text, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = { spare: () => outcome([text("${answer}")]) };
`,
});

/** An extension with a tool and a route resource, whose builds differ by what the tool answers. */
const docs = (answer: string): ExtensionFiles => ({
  manifest: `
[[tool]]
name = "ping"
description = "Answers its build."

[[route]]
name = "readme"
description = "The readme."
resource = { uri = "docs://readme", mime_type = "text/markdown" }
`,
  code: `import { outcome, text, type Route, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = { ping: () => outcome([text("${answer}")]) };
export const routes: Record<string, Route> = { readme: () => "# Readme" };
`,
});

describe("resources/list_changed to a client that listed only part of what is served", () => {
  let opened: HookSession | undefined;

  afterEach(async () => {
    await opened?.close();
    opened = undefined;
  });

  test(
    "listed the resources, then the templates after a revocation: told after the next call, tools never listed",
    async () => {
      opened = await openWrittenSession("tether-mcp-resource-lists-", EXTENSIONS, "t3");
      const { client, announced } = await connect(opened.session);
      expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(["docs://readme"]);
      expect(opened.broker.registry.revoke("docs")).toBe(true);
      // Worked out after the revocation: this list is the new one, the resources the client holds are not.
      expect((await client.listResourceTemplates()).resourceTemplates).toEqual([]);
      await client.callTool({ name: "run", arguments: {} });
      expect(announced).toEqual({ tools: 0, resources: 1 });
      expect((await client.listResources()).resources).toEqual([]);
      await client.callTool({ name: "run", arguments: {} });
      expect(announced).toEqual({ tools: 0, resources: 1 });
      await client.close();
    },
    SLOW,
  );
});

describe("list_changed with extensions active and no satellite up (a new build approved at once)", () => {
  let opened: HookSession | undefined;
  let fixtures: string;

  afterEach(async () => {
    await opened?.close();
    opened = undefined;
    rmSync(fixtures, { recursive: true, force: true });
  });

  test(
    "routes stay served with no satellite up; a revocation heard during a call is told after it",
    async () => {
      const extensions = { main: EXTENSIONS.mixed, docs: docs("build 1"), spare: spare("build 1") };
      fixtures = writeExtensions("tether-mcp-live-ext-", extensions);
      opened = await openHookSession("tether-mcp-live-", fixtures, ["main", "docs", "spare"], "t2");
      const { client, announced } = await connect(opened.session);
      const tools = async () => (await client.listTools()).tools.map((t) => t.name);
      const served = async () => (await client.listResources()).resources.map((r) => r.uri);
      expect(await tools()).toEqual(["ping", "run", "work", "spare"]);
      expect(await served()).toEqual(["docs://readme"]);

      // Each running satellite's install changed (stopped at once); the new build is approved in the same breath.
      const broker = opened.broker;
      for (const [name, build] of [
        ["docs", docs("build 2")],
        ["spare", spare("build 2")],
      ] as const) {
        writeFileSync(join(fixtures, name, "index.ts"), build.code);
        await broker.registry.install(join(fixtures, name));
        broker.registry.approve(name);
      }
      await client.callTool({ name: "run", arguments: {} });
      expect(announced).toEqual({ tools: 0, resources: 0 });
      expect(await served()).toEqual(["docs://readme"]);
      // Read with no satellite of docs up: the read boots the new build's.
      const read = await client.readResource({ uri: "docs://readme" });
      expect(read.contents).toEqual([{ uri: "docs://readme", mimeType: "text/markdown", text: "# Readme" }]);

      // spare, active with no satellite up, is revoked while a call runs: the client hears of it after that call.
      const revoked: boolean[] = [];
      await client.callTool({ name: "work", arguments: {} }, undefined, {
        onprogress: () => revoked.push(broker.registry.revoke("spare")),
      });
      expect(revoked).toEqual([true]);
      expect(announced).toEqual({ tools: 1, resources: 0 });
      expect(await tools()).toEqual(["ping", "run", "work"]);
      const pinged = (await client.callTool({ name: "ping", arguments: {} })) as CallToolResult;
      expect(pinged.content).toEqual([{ type: "text", text: "build 2" }]);
      await client.close();
    },
    SLOW,
  );
});
