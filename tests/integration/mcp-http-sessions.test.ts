/**
 * `tether mcp --http`'s MCP sessions over a real Tether session, in process
 * (serveMcpHttp): clients that vanish without DELETE cannot fill the bound for
 * good — at the bound an initialize ends the session idle longest among those
 * with nothing open, never one with a request or stream open; and a refusal
 * ends its connection, so no more of a refused body is read.
 */
import { connect } from "node:net";
import { join } from "node:path";
import { MAX_SESSIONS, serveMcpHttp, type McpHttpServer } from "../../broker/mcp/http.js";
import { openHookSession, type HookSession } from "../support/hook-session.js";
import { REPO } from "../support/satellites.js";

const TOKEN = "t".repeat(64);
let opened: HookSession;
let server: McpHttpServer;
let port: number;
const notes: string[] = [];

beforeAll(async () => {
  opened = await openHookSession(
    "tether-mcp-sessions-",
    join(REPO, "tests/integration/fixtures"),
    ["conformance"],
    "s1",
  );
  // Idle for no time at all is idle enough: the test decides which sessions have something open.
  server = await serveMcpHttp(opened.session, {
    port: 0,
    token: TOKEN,
    version: "0",
    evictIdleMs: 0,
    onNote: (n) => notes.push(n),
  });
  port = Number(new URL(server.url).port);
}, 120_000);

afterAll(async () => {
  await server.close();
  await opened.close();
});

const headers = (extra: Record<string, string> = {}) => ({
  authorization: `Bearer ${TOKEN}`,
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  ...extra,
});
const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
});

/** A client that initializes and goes away without DELETE: its session id. */
async function vanish(): Promise<string> {
  const res = await fetch(server.url, { method: "POST", headers: headers(), body: INITIALIZE });
  expect(res.status).toBe(200);
  await res.text();
  return res.headers.get("mcp-session-id")!;
}

test("at the bound, a new client takes the place of the one idle longest; one with a stream open keeps its own", async () => {
  const first = await vanish();
  // The first session opens its GET stream (as a client does to hear notifications) and keeps it.
  await fetch(server.url, {
    method: "POST",
    headers: headers({ "mcp-session-id": first, "mcp-protocol-version": "2025-06-18" }),
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  const stream = new AbortController();
  const listening = await fetch(server.url, {
    method: "GET",
    headers: headers({ "mcp-session-id": first, "mcp-protocol-version": "2025-06-18" }),
    signal: stream.signal,
  });
  expect(listening.status).toBe(200);
  const others: string[] = [];
  for (let i = 1; i < MAX_SESSIONS; i++) others.push(await vanish());
  // Full: the next client ends the idlest session with nothing open — the second one, not the first.
  await vanish();
  expect(notes.some((n) => n.includes(`MCP session ${others[0]} ended`))).toBe(true);
  const gone = await fetch(server.url, {
    method: "POST",
    headers: headers({ "mcp-session-id": others[0]!, "mcp-protocol-version": "2025-06-18" }),
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }),
  });
  expect(gone.status).toBe(404);
  const kept = await fetch(server.url, {
    method: "POST",
    headers: headers({ "mcp-session-id": first, "mcp-protocol-version": "2025-06-18" }),
    body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "ping" }),
  });
  expect(kept.status).toBe(200);
  await kept.text();
  stream.abort();
});

test("a refusal ends its connection: the rest of a refused body is never read", async () => {
  const socket = connect(port, "127.0.0.1");
  await new Promise((resolve) => socket.once("connect", resolve));
  let answer = "";
  socket.on("data", (chunk: Buffer) => (answer += chunk.toString("utf8")));
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("error", () => {});
  // No token, and a body it says is a GiB long: the 401 comes, then the connection ends.
  socket.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 1073741824\r\n\r\n`);
  socket.write("x".repeat(1024));
  await closed;
  expect(answer).toMatch(/^HTTP\/1\.1 401 /);
  expect(answer.toLowerCase()).toContain("connection: close");
});

test(`with none idle long enough, the initialize past ${MAX_SESSIONS} sessions is 503 until one is closed`, async () => {
  const strict = await serveMcpHttp(opened.session, { port: 0, token: TOKEN, version: "0", evictIdleMs: 3_600_000 });
  try {
    const init = () => fetch(strict.url, { method: "POST", headers: headers(), body: INITIALIZE });
    const ids: string[] = [];
    for (let i = 0; i < MAX_SESSIONS; i++) {
      const res = await init();
      expect(res.status).toBe(200);
      await res.text();
      ids.push(res.headers.get("mcp-session-id")!);
    }
    const refused = await init();
    expect(refused.status).toBe(503);
    expect(await refused.text()).toContain(`Too many MCP sessions (${MAX_SESSIONS}), none idle`);
    const closed = await fetch(strict.url, {
      method: "DELETE",
      headers: headers({ "mcp-session-id": ids[0]!, "mcp-protocol-version": "2025-06-18" }),
    });
    expect(closed.status).toBe(200);
    const admitted = await init();
    expect(admitted.status).toBe(200);
    await admitted.text();
  } finally {
    await strict.close();
  }
});
