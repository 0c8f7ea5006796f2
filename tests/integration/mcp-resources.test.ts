/**
 * MCP resources of `tether mcp`: the session's context (a loader's text, a
 * managed preparation's) and the routes that declare a `resource`, driven by
 * the SDK's own `Client` — over stdio against the real `node bin/tether.js
 * mcp`, and in this process over the SDK's in-memory transport where the test
 * must reload the session itself. A read runs the route through the session
 * (`route_call` hooks, the ledger); a failed read is an MCP error saying why,
 * never a stack; a session with nothing to serve does not declare resources.
 * Extensions: written to a temporary folder by this suite.
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpError, type Resource } from "@modelcontextprotocol/sdk/types.js";
import Database from "better-sqlite3";
import { Broker } from "../../broker/broker.js";
import { silentLogger } from "../../broker/base/log.js";
import { createMcpServer } from "../../broker/mcp/server.js";
import { envOptions, passedEnv } from "../support/env-options.js";
import { openHookSession, type HookSession } from "../support/hook-session.js";
import { REPO } from "../support/satellites.js";
import { until } from "../support/wait.js";
import { writeExtensions } from "./support/write-extensions.js";

const BIN = join(REPO, "bin", "tether.js");
/** tsx start-up plus real satellite boots. */
const SLOW = 120_000;
/** A 1x1 PNG: what the binary resource's route answers, as base64. */
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

const EXTENSIONS = {
  library: {
    manifest: `
[[context]]
name = "notes"
description = "The library's notes."

[managed]

[[route]]
name = "readme"
description = "The library's readme."
resource = { uri = "docs://readme", mime_type = "text/markdown" }

[[route]]
name = "logo"
description = "The library's logo."
resource = { uri = "docs://logo", mime_type = "image/png" }

[[route]]
name = "item"
description = "One item at one version."
resource = { uri = "docs://items/{id}/v/{version}", mime_type = "application/json" }

[[route]]
name = "broken"
description = "Claims a PNG, answers text."
resource = { uri = "docs://broken", mime_type = "image/png" }

[[route]]
name = "secret"
description = "What the guard keeps to itself."
resource = { uri = "docs://secret" }

[[route]]
name = "plain"
description = "A route that is no resource."
`,
    code: `import type { ContextLoader, Managed, Route } from "@tether/ext";
export const tools = {};
export const contexts: Record<string, ContextLoader> = { notes: (session) => \`notes for \${session.session_id}\` };
export const managed: Managed = { prepare: () => ({ instructions: "Use the library.", context: "Shelf 3." }) };
export const routes: Record<string, Route> = {
  readme: () => "# The library",
  logo: () => "${PNG}",
  item: (request) => request,
  broken: () => "this is not base64!",
  secret: () => "the secret",
  plain: () => "plain",
};
`,
  },
  guard: {
    manifest: `
[[hook]]
event = "route_call"
`,
    code: `import { hook } from "@tether/ext";
export const tools = {};
export const hooks = {
  route_call: hook("route_call", (p) =>
    p.request.includes("docs://secret") ? { block: "the guard keeps docs://secret to itself" } : {},
  ),
};
`,
  },
  plain: {
    manifest: `
[[tool]]
name = "noop"
description = "Does nothing."
`,
    code: `import { outcome, text, type Tool } from "@tether/ext";
export const tools: Record<string, Tool> = { noop: () => outcome([text("ok")]) };
`,
  },
};

/** What the spawned server needs from this environment (the transport passes only a safe default set). */
function passthroughEnv(): Record<string, string> {
  return passedEnv();
}

/** A client that records each resource list the server said changed (refetched at once). */
function recordingClient(changed: Resource[][]): Client {
  return new Client(
    { name: "tether-mcp-resources-test", version: "1.0.0" },
    {
      listChanged: {
        resources: {
          autoRefresh: true,
          debounceMs: 0,
          onChanged: (error, resources) => {
            if (error === null && resources !== null) changed.push(resources);
          },
        },
      },
    },
  );
}

/** The MCP error a read ends in (fails the test if it answers). */
async function readError(client: Client, uri: string): Promise<McpError> {
  try {
    await client.readResource({ uri });
  } catch (err) {
    if (err instanceof McpError) return err;
    throw err;
  }
  throw new Error(`reading ${uri} answered; an error was expected`);
}

let fixtures: string;

beforeAll(() => {
  fixtures = writeExtensions("tether-mcp-resources-ext-", EXTENSIONS);
});

afterAll(() => {
  rmSync(fixtures, { recursive: true, force: true });
});

describe("tether mcp on stdio: the session's context and its routes' resources", () => {
  let root: string;
  let home: string;
  let client: Client;
  let child: ChildProcess;
  let stderr = "";
  const changed: Resource[][] = [];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "tether-mcp-resources-"));
    home = join(root, "home");
    const workspace = join(root, "ws");
    mkdirSync(workspace);
    const operator = Broker.open({ ...envOptions(), home, log: silentLogger });
    try {
      for (const name of ["library", "guard"]) {
        await operator.registry.install(join(fixtures, name));
        operator.registry.approve(name);
      }
    } finally {
      await operator.close();
    }
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp", "--session", "s1", "--home", home, "--workspace", workspace],
      env: passthroughEnv(),
      cwd: REPO,
      stderr: "pipe",
    });
    (transport.stderr as Readable).on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    client = recordingClient(changed);
    await client.connect(transport);
    child = (transport as unknown as { _process: ChildProcess })._process;
  }, SLOW);

  afterAll(async () => {
    await client?.close();
    if (child !== undefined && child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve));
    rmSync(root, { recursive: true, force: true });
  }, SLOW);

  /** The outcomes of s1's ledger rows for `route`, once `count` are committed and ended (the ledger commits in batches). */
  async function routeOutcomes(route: string, count: number): Promise<string[]> {
    let outcomes: string[] = [];
    await until(`${count} ended ledger row(s) of route ${route}`, () => {
      const db = new Database(join(home, "tether.db"), { readonly: true });
      try {
        const rows = db
          .prepare(
            "select outcome from invocations where session_id = 's1' and kind = 'route' and name = ? order by id",
          )
          .all(route) as { outcome: string }[];
        outcomes = rows.map((r) => r.outcome);
      } finally {
        db.close();
      }
      return outcomes.length >= count && !outcomes.includes("running");
    });
    return outcomes;
  }

  test("resources are declared with listChanged and without subscribe", () => {
    expect(client.getServerCapabilities()?.resources).toEqual({ listChanged: true });
  });

  test("resources/list: the context loader's text, the preparation's, and each fixed route resource", async () => {
    const { resources } = await client.listResources();
    expect(resources).toEqual([
      {
        uri: "tether://context/library/notes",
        name: "library/notes",
        description: expect.stringContaining("context loader 'notes' of 'library'"),
        mimeType: "text/plain",
      },
      {
        uri: "tether://prepare/library",
        name: "library/prepare",
        description: expect.stringContaining("'library' prepared"),
        mimeType: "text/plain",
      },
      { uri: "docs://readme", name: "library/readme", description: "The library's readme.", mimeType: "text/markdown" },
      { uri: "docs://logo", name: "library/logo", description: "The library's logo.", mimeType: "image/png" },
      {
        uri: "docs://broken",
        name: "library/broken",
        description: "Claims a PNG, answers text.",
        mimeType: "image/png",
      },
      {
        uri: "docs://secret",
        name: "library/secret",
        description: "What the guard keeps to itself.",
        mimeType: "text/plain",
      },
    ]);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates).toEqual([
      {
        uriTemplate: "docs://items/{id}/v/{version}",
        name: "library/item",
        description: "One item at one version.",
        mimeType: "application/json",
      },
    ]);
  });

  test("resources/read: the context's texts as the session composed them", async () => {
    expect((await client.readResource({ uri: "tether://context/library/notes" })).contents).toEqual([
      { uri: "tether://context/library/notes", mimeType: "text/plain", text: "notes for s1" },
    ]);
    expect((await client.readResource({ uri: "tether://prepare/library" })).contents).toEqual([
      { uri: "tether://prepare/library", mimeType: "text/plain", text: "Use the library.\n\nShelf 3." },
    ]);
  });

  test("resources/read: a text type's answer is text, a binary type's is its base64 as blob", async () => {
    expect((await client.readResource({ uri: "docs://readme" })).contents).toEqual([
      { uri: "docs://readme", mimeType: "text/markdown", text: "# The library" },
    ]);
    expect((await client.readResource({ uri: "docs://logo" })).contents).toEqual([
      { uri: "docs://logo", mimeType: "image/png", blob: PNG },
    ]);
  });

  test("a template read hands the route the URI and its variables, %-decoded", async () => {
    const uri = "docs://items/42/v/two%20words";
    const [content] = (await client.readResource({ uri })).contents;
    expect(content).toMatchObject({ uri, mimeType: "application/json" });
    expect(JSON.parse((content as { text: string }).text)).toEqual({
      uri,
      params: { id: "42", version: "two words" },
    });
  });

  test("a route_call hook that blocks the read is an MCP error with its reason; the ledger says blocked", async () => {
    const err = await readError(client, "docs://secret");
    expect(err.message).toContain("blocked: Blocked by 'guard': the guard keeps docs://secret to itself");
    expect(err.message).not.toMatch(/\n\s+at /);
    expect(await routeOutcomes("secret", 1)).toEqual(["blocked"]);
    // The template read before it went through the ledger as any route call does.
    expect(await routeOutcomes("item", 1)).toEqual(["ok"]);
  });

  test("a binary type's route that answers what is not base64 is an MCP error saying what it must return", async () => {
    const err = await readError(client, "docs://broken");
    expect(err.message).toContain(
      "route 'library/broken' serves 'docs://broken' as image/png, a binary type, so it must return the bytes as base64",
    );
  });

  test("an unknown URI is resource-not-found (-32002) naming what is served", async () => {
    const err = await readError(client, "docs://nope");
    expect(err.code).toBe(-32002);
    // Said once: "MCP error -32002: Resource not found…", not the prefix twice.
    expect(err.message).toMatch(/^MCP error -32002: Resource not found: 'docs:\/\/nope'/);
    expect(err.message).toContain(
      "Resource not found: 'docs://nope'; this session serves tether://context/library/notes",
    );
    expect(err.message).toContain("docs://items/{id}/v/{version}");
    // Nothing matched the template either: one more segment than it has.
    expect((await readError(client, "docs://items/1/v/2/3")).code).toBe(-32002);
  });

  test(
    "the extension drops out (approval revoked): after the next read the client is told the list changed",
    async () => {
      const operator = Broker.open({ ...envOptions(), home, log: silentLogger });
      try {
        expect(operator.registry.revoke("library")).toBe(true);
      } finally {
        await operator.close();
      }
      expect((await readError(client, "docs://readme")).code).toBe(-32002);
      await until("resources/list_changed", () => changed.length > 0);
      expect(changed).toEqual([[]]);
      expect(stderr).not.toMatch(/\n\s+at /);
    },
    SLOW,
  );
});

describe("in this process: what a reload changes, and a session with nothing to serve", () => {
  let opened: HookSession;

  afterEach(async () => {
    await opened?.close();
  });

  /** An SDK client connected to a server over `opened`'s session. */
  async function connect(changed: Resource[][]): Promise<Client> {
    const server = createMcpServer(opened.session, { version: "0.0.0-test" });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = recordingClient(changed);
    await client.connect(clientSide);
    return client;
  }

  test(
    "a reload that deactivates the extension sends notifications/resources/list_changed",
    async () => {
      opened = await openHookSession("tether-mcp-resources-reload-", fixtures, ["library", "plain"], "r1");
      const changed: Resource[][] = [];
      const client = await connect(changed);
      expect((await client.listResources()).resources.map((r) => r.uri)).toContain("docs://readme");
      opened.session.prefer("library", false);
      await opened.session.reload();
      await until("resources/list_changed", () => changed.length > 0);
      expect(changed).toEqual([[]]);
      expect((await client.listResourceTemplates()).resourceTemplates).toEqual([]);
      await client.close();
    },
    SLOW,
  );

  test(
    "no context loaders and no resource routes: resources are not declared, resources/list is not a method",
    async () => {
      opened = await openHookSession("tether-mcp-resources-none-", fixtures, ["plain"], "n1");
      const client = await connect([]);
      expect(client.getServerCapabilities()?.resources).toBeUndefined();
      expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
      await expect(client.listResources()).rejects.toMatchObject({
        code: -32601,
        message: expect.stringMatching(/Method not found/),
      });
      await client.close();
    },
    SLOW,
  );
});
