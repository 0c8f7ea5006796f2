/**
 * A session's MCP server over Streamable HTTP (the SDK's transport), on a
 * loopback port of its own, beside stdio (docs/mcp.md, "Over HTTP").
 *
 * Every request passes the gate (http-gate.ts: Host, Origin, then the token:
 * `Authorization: Bearer <token>` on /mcp, or the path /mcp/<token> — a
 * capability URL, for clients that send no headers; other paths 404; the body
 * bounds), then its MCP session (http-sessions.ts).
 */
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { bearerMatches, tokenMatches } from "../base/serve-token.js";
import type { Session } from "../sessions/session.js";
import { admit, type Refusal, refuse, unauthorized } from "./http-gate.js";
import { McpHttpSessions } from "./http-sessions.js";

export { MAX_BODY_BYTES } from "./http-gate.js";
export { EVICT_IDLE_MS, IDLE_CLOSE_MS, MAX_SESSIONS } from "./http-sessions.js";

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
  /** Ends every MCP session (open calls are cancelled) and stops listening. */
  close(): Promise<void>;
}

const NOT_FOUND: Refusal = { status: 404, message: "Not found: the MCP endpoint is /mcp" };
const UNAUTHORIZED = unauthorized("send 'Authorization: Bearer <token>' (the token file's), or use /mcp/<token>");

/** Serves `session` over Streamable HTTP on 127.0.0.1; its clients hear of its reloads by themselves. */
export async function serveMcpHttp(session: Session, options: McpHttpOptions): Promise<McpHttpServer> {
  const note = options.onNote ?? (() => {});
  const sessions = new McpHttpSessions({
    version: options.version,
    onNote: note,
    ...(options.evictIdleMs !== undefined ? { evictIdleMs: options.evictIdleMs } : {}),
  });
  let port = options.port;

  const http: HttpServer = createServer((req, res) => {
    const served = async () => {
      const admitted = await admit(req, res, {
        port,
        resolve: (path) => {
          if (path === "/mcp")
            return bearerMatches(req.headers.authorization, options.token)
              ? { target: null }
              : { refused: UNAUTHORIZED };
          if (!path.startsWith("/mcp/")) return { refused: NOT_FOUND };
          return tokenMatches(path.slice("/mcp/".length), options.token) ? { target: null } : { refused: UNAUTHORIZED };
        },
      });
      if (admitted !== null) await sessions.serve(req, res, admitted.body, session);
    };
    served().catch((err: unknown) => {
      note(`request failed: ${(err as Error).message}`);
      refuse(req, res, { status: 500, message: "Internal error" });
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
    async close() {
      await sessions.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
