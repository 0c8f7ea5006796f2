/**
 * An `initialize` over Streamable HTTP that the SDK's transport refuses (the
 * wrong Accept or Content-Type) opens no MCP session: the server made for it
 * is closed, so it leaves no listener on the Tether session behind — a client
 * repeating it cannot grow the broker's memory without bound.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { McpHttpSessions } from "../../broker/mcp/http-sessions.js";
import type { Session } from "../../broker/sessions/session.js";

const listeners = new Set<unknown>();
const session = {
  id: "s",
  context: () => [],
  routes: () => [],
  tools: () => [],
  commands: () => [],
  revision: () => 0,
  onChange: (listener: unknown) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
} as unknown as Session;

let sessions: McpHttpSessions;
let http: Server;
let url: string;

beforeAll(async () => {
  sessions = new McpHttpSessions({ version: "0", onNote: () => {} });
  http = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    req.on("end", () => void sessions.serve(req, res, text === "" ? undefined : JSON.parse(text), session));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
});

afterAll(async () => {
  await sessions.close();
  await new Promise((resolve) => http.close(resolve));
});

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "c", version: "1" } },
});

test("a refused initialize leaves no listener on the Tether session", async () => {
  for (const accept of ["application/json", "text/html", "text/event-stream"]) {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept },
      body: INITIALIZE,
    });
    expect(res.status).toBe(406);
    await res.text();
  }
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "text/plain", accept: "application/json, text/event-stream" },
    body: INITIALIZE,
  });
  expect(res.status).toBe(415);
  await res.text();
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(listeners.size).toBe(0);
});

test("an accepted initialize keeps its listeners until its session is deleted", async () => {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: INITIALIZE,
  });
  expect(res.status).toBe(200);
  await res.text();
  const id = res.headers.get("mcp-session-id")!;
  expect(listeners.size).toBeGreaterThan(0);
  const deleted = await fetch(url, { method: "DELETE", headers: { "mcp-session-id": id } });
  await deleted.text();
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(listeners.size).toBe(0);
});
