/**
 * MCP under `tether serve` (broker/mcp/serve-mcp.ts): the server in this
 * process on a loopback port, real jailed satellites behind it, the MCP SDK's
 * own Client over StreamableHTTPClientTransport at `/mcp/<session>` of a
 * session a WebSocket client opened. The gate is probed class by class with
 * serve's token (Host, Origin, token in header and path — before the session
 * is looked up), and the binding to the Tether session: another session's MCP
 * session id, a reload telling the client its lists changed, a close ending
 * the MCP sessions, a session reopened under the same id being a new one.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { WebSocket } from "ws";
import { silentLogger } from "../../broker/base/log.js";
import { Broker } from "../../broker/broker.js";
import { ServeServer } from "../../broker/tether-serve/serve-server.js";
import { envOptions } from "../support/env-options.js";
import {
  foreignHosts,
  foreignOrigins,
  INITIALIZE,
  loopbackHosts,
  mcpHeaders,
  ownOrigins,
  rawRequest,
  wrongAuthorizations,
  wrongPathTokens,
} from "../support/mcp-gate-probes.js";
import { REPO } from "../support/satellites.js";
import { until } from "../support/wait.js";
import { rpcOver } from "./support/console-client.js";

const SLOW = 60_000;
const TOKEN = "m".repeat(64);

let tmp: string;
let broker: Broker;
let server: ServeServer;
let port: number;
let ws: WebSocket;

async function rpc(method: string, params: unknown): Promise<Record<string, unknown>> {
  const answer = await rpcOver(ws, method, params);
  if (answer["error"] !== undefined) throw new Error(`${method}: ${JSON.stringify(answer["error"])}`);
  return answer["result"] as Record<string, unknown>;
}

const open = (id: string) => rpc("session.open", { id, workspace: tmp });

async function client(session: string): Promise<Client> {
  const c = new Client({ name: "serve-mcp-test", version: "1.0.0" });
  await c.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp/${session}`), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    }),
  );
  return c;
}

const raw = (path: string, override: Record<string, string | undefined> = {}, body = INITIALIZE) =>
  rawRequest(port, { path, headers: mcpHeaders(port, TOKEN, override), body });

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "tether-serve-mcp-"));
  broker = Broker.open({ ...envOptions(), home: join(tmp, "home"), log: silentLogger });
  writeFileSync(join(broker.home, "policy.toml"), "");
  await broker.registry.install(join(REPO, "manifests/echo"));
  broker.registry.approve("echo");
  server = new ServeServer({ broker, token: TOKEN, log: silentLogger, say: () => {} });
  const { url } = await server.listen({ port: 0 });
  port = Number(new URL(url).port);
  ws = new WebSocket(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  await open("s1");
  await open("s2");
}, SLOW);

afterAll(async () => {
  ws.close();
  await server.shutdown(new Promise(() => {}));
  rmSync(tmp, { recursive: true, force: true });
}, SLOW);

test(
  "an MCP client attaches to a session the server's client opened, and runs its jailed tools",
  async () => {
    const c = await client("s1");
    try {
      expect((await c.listTools()).tools.map((t) => t.name).sort()).toEqual(["count", "echo"]);
      const answer = await c.callTool({ name: "echo", arguments: { text: "over serve" } });
      expect(answer.content).toEqual([{ type: "text", text: "over serve" }]);
      expect(answer._meta).toMatchObject({ "tether/extension": "echo", "tether/invocation": expect.any(Number) });
      // The call is the session's own: its ledger row names it.
      broker.ledger.flush();
      const row = broker.store.sqlite
        .prepare("select session_id, extension, name, outcome from invocations where id = ?")
        .get(answer._meta!["tether/invocation"]);
      expect(row).toEqual({ session_id: "s1", extension: "echo", name: "echo", outcome: "ok" });
    } finally {
      await c.close();
    }
    // A client that sends no headers: the capability URL.
    const noHeaders = new Client({ name: "serve-mcp-test", version: "1.0.0" });
    await noHeaders.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp/s2/${TOKEN}`)));
    expect((await noHeaders.callTool({ name: "echo", arguments: { text: "by path" } })).content).toEqual([
      { type: "text", text: "by path" },
    ]);
    await noHeaders.close();
  },
  SLOW,
);

describe("the gate, with serve's token", () => {
  test("every foreign Host and Origin is refused (403); loopback names and the server's own origins pass", async () => {
    for (const host of foreignHosts(port)) expect([host, (await raw("/mcp/s1", { host })).status]).toEqual([host, 403]);
    for (const host of loopbackHosts(port))
      expect([host, (await raw("/mcp/s1", { host })).status]).toEqual([host, 200]);
    for (const origin of foreignOrigins(port))
      expect([origin, (await raw("/mcp/s1", { origin })).status]).toEqual([origin, 403]);
    for (const origin of ownOrigins(port))
      expect([origin, (await raw("/mcp/s1", { origin })).status]).toEqual([origin, 200]);
  });

  test("every missing or wrong token is 401 — for an open session and for one that is not, alike", async () => {
    for (const session of ["s1", "nope"]) {
      for (const authorization of wrongAuthorizations(TOKEN)) {
        const answer = await raw(`/mcp/${session}`, { authorization });
        expect([session, authorization, answer.status]).toEqual([session, authorization, 401]);
      }
      for (const given of wrongPathTokens(TOKEN)) {
        const answer = await raw(`/mcp/${session}/${given}`, { authorization: undefined });
        expect([session, given, answer.status]).toEqual([session, given, 401]);
      }
    }
    // With the token, a session not open here is 404 naming what opens one; paths that name no session are 404.
    const unknown = await raw("/mcp/nope");
    expect(unknown.status).toBe(404);
    expect(unknown.body).toContain("No session 'nope' is open on this server: open it with session.open");
    for (const path of ["/mcp", "/mcp/", "/mcp/..", "/mcp/a%2Fb", `/mcp/s1/${TOKEN}/more`, "/mcp/-x"])
      expect([path, (await raw(path)).status]).toEqual([path, 404]);
  });

  test(
    "over a Unix socket no Origin is the server's own",
    async () => {
      // Its own broker: a server's shutdown closes the broker it serves.
      const second = Broker.open({ ...envOptions(), home: join(tmp, "home-socket"), log: silentLogger });
      await second.registry.install(join(REPO, "manifests/echo"));
      second.registry.approve("echo");
      const onSocket = new ServeServer({ broker: second, token: TOKEN, log: silentLogger, say: () => {} });
      const socketPath = join(tmp, "mcp.sock");
      await onSocket.listen({ socket: socketPath });
      const sock = new WebSocket(`ws+unix:${socketPath}`, { headers: { Authorization: `Bearer ${TOKEN}` } });
      try {
        await new Promise((resolve, reject) => sock.once("open", resolve).once("error", reject));
        expect((await rpcOver(sock, "session.open", { id: "u1", workspace: tmp }))["result"]).toBeDefined();
        const headers = (origin?: string) => mcpHeaders(0, TOKEN, { host: "localhost", origin });
        const request = (origin?: string) =>
          rawRequest({ socketPath }, { path: "/mcp/u1", headers: headers(origin), body: INITIALIZE });
        expect((await request()).status).toBe(200);
        for (const origin of ["http://localhost", "http://127.0.0.1", ...foreignOrigins(80)])
          expect([origin, (await request(origin)).status]).toEqual([origin, 403]);
      } finally {
        sock.close();
        await onSocket.shutdown(new Promise(() => {}));
      }
    },
    SLOW,
  );
});

describe("bound to the Tether session", () => {
  test("an MCP session of one Tether session is not found under another", async () => {
    const c = await client("s1");
    const id = (c.transport as StreamableHTTPClientTransport).sessionId!;
    try {
      const ping = JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" });
      const headers = { "mcp-session-id": id, "mcp-protocol-version": "2025-06-18" };
      expect((await raw("/mcp/s1", headers, ping)).status).toBe(200);
      const elsewhere = await raw("/mcp/s2", headers, ping);
      expect(elsewhere.status).toBe(404);
      expect(elsewhere.body).toContain("Session not found");
    } finally {
      await c.close();
    }
  });

  test(
    "a reload tells the client its tools changed; closing the session ends its MCP sessions, even reopened",
    async () => {
      await open("r1");
      const c = await client("r1");
      const id = (c.transport as StreamableHTTPClientTransport).sessionId!;
      let changed = 0;
      c.setNotificationHandler(ToolListChangedNotificationSchema, () => void (changed += 1));
      // A client's GET stream is where an unsolicited notification arrives: wait until the server holds it.
      for (let tries = 0; changed === 0; tries++) {
        if (tries > 500) throw new Error("no tools/list_changed after 500 reloads");
        await rpc("session.reload", { session: "r1" });
        await new Promise((r) => setTimeout(r, 10));
      }
      await rpc("session.prefer", { session: "r1", extension: "echo", enabled: false });
      const before = changed;
      await rpc("session.reload", { session: "r1" });
      await until("tools/list_changed after the reload", () => changed > before);
      expect((await c.listTools()).tools).toEqual([]);

      await rpc("session.close", { session: "r1" });
      const ping = JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" });
      const headers = { "mcp-session-id": id, "mcp-protocol-version": "2025-06-18" };
      const closed = await raw("/mcp/r1", headers, ping);
      expect(closed.status).toBe(404);
      expect(closed.body).toContain("No session 'r1' is open");
      // Opened again under the same id it is another session: the old MCP session is not its.
      await open("r1");
      const reopened = await raw("/mcp/r1", headers, ping);
      expect(reopened.status).toBe(404);
      expect(reopened.body).toContain("Session not found");
      await c.close().catch(() => {});
    },
    SLOW,
  );
});
