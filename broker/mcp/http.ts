/**
 * A session's MCP server over Streamable HTTP (the SDK's transport), on a
 * loopback port, beside stdio (docs/mcp.md, "Over HTTP").
 *
 * Every request passes the same gate before the SDK sees a byte:
 *   Host a loopback name? (403) ─► Origin absent or this server's own? (403)
 *   ─► the token: `Authorization: Bearer <token>` on /mcp, or the path
 *      /mcp/<token> (a capability URL, for clients that send no headers) (401)
 *   ─► a body of at most MAX_BODY_BYTES, JSON within CALLER_JSON_BOUNDS (413 / 400)
 *   ─► its MCP session: a new one for `initialize` (at most MAX_SESSIONS),
 *      else the `Mcp-Session-Id` it names (404 when unknown).
 * Every refusal ends its connection (nothing more of that request is read).
 * A client that vanished without DELETE leaves its session idle: when the
 * bound is reached, an `initialize` ends the session idle longest among those
 * with no request or stream open, idle for at least `evictIdleMs` (503 when
 * none is); a session idle for IDLE_CLOSE_MS is ended anyway.
 * Each MCP session is one SDK `Server` over the same Tether session: every
 * client's calls go through that session's hooks, ledger and approvals.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { CALLER_JSON_BOUNDS, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import { hostProblem, originProblem } from "../base/loopback-host.js";
import { bearerMatches, tokenMatches } from "../base/serve-token.js";
import type { Session } from "../sessions/session.js";
import { createMcpServer } from "./server.js";

/** The largest request body read (an MCP message from a client; tool arguments included). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** MCP sessions open at once; past it an idle one is ended, or the `initialize` refused. */
export const MAX_SESSIONS = 64;
/** How long a session must have been idle (nothing open) before a new client may take its place. */
export const EVICT_IDLE_MS = 30_000;
/** A session idle this long is ended whatever the count. */
export const IDLE_CLOSE_MS = 30 * 60_000;

export interface McpHttpOptions {
  /** The loopback port; 0 picks a free one. */
  readonly port: number;
  /** The bearer token every request must carry (header or capability URL). */
  readonly token: string;
  /** The server's version (its `serverInfo`). */
  readonly version: string;
  /** What the server has to say (hooks' notes, refusals): for the operator, never the model. */
  readonly onNote?: (line: string) => void;
  /** Idle time after which a session may give its place to a new one (default EVICT_IDLE_MS). */
  readonly evictIdleMs?: number;
}

export interface McpHttpServer {
  /** The endpoint a client given the token in a header uses: http://127.0.0.1:<port>/mcp. */
  readonly url: string;
  /** The endpoint that carries the token itself (a secret, as the token is). */
  readonly capabilityUrl: string;
  /** Tells every connected client its tool and prompt lists changed (after a reload). */
  listChanged(): Promise<void>;
  /** Ends every MCP session (open calls are cancelled) and stops listening. */
  close(): Promise<void>;
}

interface Open {
  readonly transport: StreamableHTTPServerTransport;
  readonly server: ReturnType<typeof createMcpServer>;
  /** Requests and streams of this session not yet answered or closed. */
  busy: number;
  /** When its last request or stream ended (Date.now()). */
  idleSince: number;
}

/** Answers a refusal and ends the connection: nothing more of this request is read. */
function refuse(req: IncomingMessage, res: ServerResponse, status: number, message: string, headers = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.once("finish", () => req.destroy());
  res.writeHead(status, { "content-type": "application/json", connection: "close", ...headers });
  // A JSON-RPC error with no id: what the SDK's own transport answers for a request it refuses.
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

/** The request's body, at most `MAX_BODY_BYTES` (null: it was longer, and the socket is answered 413). */
async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Whether the request carries the token: in the path (a capability URL) or in its Authorization header. */
function authorized(req: IncomingMessage, path: string, token: string): boolean {
  if (path === "/mcp") return bearerMatches(req.headers.authorization, token);
  const given = path.slice("/mcp/".length);
  return tokenMatches(given, token);
}

/** Serves `session` over Streamable HTTP on 127.0.0.1. */
export async function serveMcpHttp(session: Session, options: McpHttpOptions): Promise<McpHttpServer> {
  const note = options.onNote ?? (() => {});
  const evictIdleMs = options.evictIdleMs ?? EVICT_IDLE_MS;
  const open = new Map<string, Open>();
  let port = options.port;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const host = hostProblem(req);
    if (host !== null) return refuse(req, res, 403, `Forbidden: ${host}`);
    const origin = originProblem(req, port);
    if (origin !== null) return refuse(req, res, 403, `Forbidden: ${origin}`);
    const path = (req.url ?? "/").split("?")[0]!;
    if (path !== "/mcp" && !path.startsWith("/mcp/"))
      return refuse(req, res, 404, "Not found: the MCP endpoint is /mcp");
    if (!authorized(req, path, options.token))
      return refuse(
        req,
        res,
        401,
        "Unauthorized: send 'Authorization: Bearer <token>' (the token file's), or use /mcp/<token>",
        {
          "www-authenticate": 'Bearer realm="tether"',
        },
      );

    let body: unknown;
    if (req.method === "POST") {
      const text = await readBody(req);
      if (text === null) {
        return refuse(req, res, 413, `Payload too large: at most ${MAX_BODY_BYTES} bytes`);
      }
      try {
        body = parseBoundedJson(text, CALLER_JSON_BOUNDS);
      } catch (err) {
        return refuse(req, res, 400, `Parse error: ${(err as Error).message}`);
      }
    }
    const named = req.headers["mcp-session-id"];
    const id = typeof named === "string" ? named : undefined;
    if (id !== undefined) {
      const existing = open.get(id);
      if (existing === undefined) return refuse(req, res, 404, "Session not found: initialize a new one");
      return served(existing, res, () => existing.transport.handleRequest(req, res, body));
    }
    if (req.method !== "POST" || !isInitializeRequest(body))
      return refuse(req, res, 400, "Bad request: no Mcp-Session-Id, and not an initialize request");
    if (open.size >= MAX_SESSIONS && !evictIdlest())
      return refuse(req, res, 503, `Too many MCP sessions (${MAX_SESSIONS}), none idle: close one (DELETE) first`);

    const server = createMcpServer(session, { version: options.version, onNote: note });
    // Registered once the transport has made the session's id (during the initialize below).
    let entry: Open | null = null;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        if (entry !== null) open.set(sessionId, entry);
      },
      onsessionclosed: (sessionId) => {
        open.delete(sessionId);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) open.delete(transport.sessionId);
    };
    entry = { transport, server, busy: 0, idleSince: Date.now() };
    server.onerror = (err) => note(`protocol error: ${err.message}`);
    await server.connect(transport);
    const created = entry;
    return served(created, res, () => transport.handleRequest(req, res, body));
  };

  /** Runs one request of `entry`'s session, counting it busy until its response (or stream) ends. */
  const served = async (entry: Open, res: ServerResponse, run: () => Promise<void>): Promise<void> => {
    entry.busy += 1;
    res.once("close", () => {
      entry.busy -= 1;
      entry.idleSince = Date.now();
    });
    await run();
  };

  /** Ends the session idle longest among those with nothing open (idle at least evictIdleMs); whether one was. */
  const evictIdlest = (): boolean => {
    const now = Date.now();
    let idlest: [string, Open] | null = null;
    for (const pair of open) {
      const [, o] = pair;
      if (o.busy > 0 || now - o.idleSince < evictIdleMs) continue;
      if (idlest === null || o.idleSince < idlest[1].idleSince) idlest = pair;
    }
    if (idlest === null) return false;
    const [id, o] = idlest;
    open.delete(id);
    note(
      `MCP session ${id} ended: idle since ${new Date(o.idleSince).toISOString()}, and a new client needed its place`,
    );
    void o.server.close().catch(() => {});
    return true;
  };

  // Sessions idle past IDLE_CLOSE_MS end whatever the count (a client that left without DELETE).
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, o] of open) {
      if (o.busy > 0 || now - o.idleSince < IDLE_CLOSE_MS) continue;
      open.delete(id);
      void o.server.close().catch(() => {});
    }
  }, 60_000);
  sweep.unref();

  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      note(`request failed: ${(err as Error).message}`);
      refuse(req, res, 500, "Internal error");
    });
  });
  // Bounds on what a slow or idle client holds open.
  http.headersTimeout = 10_000;
  http.requestTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port, "127.0.0.1", () => {
      http.off("error", reject);
      resolve();
    });
  });
  port = (http.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;

  return {
    url: `${base}/mcp`,
    capabilityUrl: `${base}/mcp/${options.token}`,
    async listChanged() {
      await Promise.all(
        [...open.values()].map((o) =>
          Promise.all([o.server.sendToolListChanged(), o.server.sendPromptListChanged()]).catch(() => {}),
        ),
      );
    },
    async close() {
      clearInterval(sweep);
      await Promise.all([...open.values()].map((o) => o.server.close().catch(() => {})));
      open.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
