/**
 * MCP over Streamable HTTP under `tether serve`, on its API listener: the
 * sessions its clients opened, each at `/mcp/<session id>` (docs/mcp.md,
 * "Under tether serve").
 *
 * The same gate as `tether mcp --http` (http-gate.ts), with serve's token:
 * `Authorization: Bearer <token>` on `/mcp/<session>`, or the capability URL
 * `/mcp/<session>/<token>` for clients that send no headers. A session that
 * is not open here is 404 — MCP never opens one (it has no workspace to give):
 * a harness opens it with `session.open`, and MCP clients attach to it. When
 * the session closes, its MCP sessions end; when it reloads, their clients
 * are told the lists changed.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { bearerMatches, tokenMatches } from "../base/serve-token.js";
import type { Session } from "../sessions/session.js";
import { admit, type Resolved, refuse, unauthorized } from "./http-gate.js";
import { McpHttpSessions } from "./http-sessions.js";

/** Where MCP is mounted on serve's API listener. */
export const MCP_PREFIX = "/mcp";

/** A session id as `session.open` takes it (session-records.ts): nothing else names one. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export interface ServeMcpOptions {
  /** serve's token (the same as the API's). */
  readonly token: string;
  /** The server's version (its `serverInfo`). */
  readonly version: string;
  /** The session open on the server under `id` (and done opening), or null. */
  readonly session: (id: string) => Session | null;
  /** The API listener's loopback port (its own Origin); null over a Unix socket. */
  readonly port: () => number | null;
  /** Lines for the operator's log (hooks' notes, protocol errors). */
  readonly onNote: (line: string) => void;
}

export class ServeMcp {
  readonly #options: ServeMcpOptions;
  readonly #sessions: McpHttpSessions;

  constructor(options: ServeMcpOptions) {
    this.#options = options;
    this.#sessions = new McpHttpSessions({ version: options.version, onNote: options.onNote });
  }

  /** Answers one request under MCP_PREFIX. */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const admitted = await admit(req, res, {
        port: this.#options.port(),
        resolve: (path) => this.#resolve(path, req),
      });
      if (admitted !== null) await this.#sessions.serve(req, res, admitted.body, admitted.target);
    } catch (err) {
      this.#options.onNote(`tether serve: an MCP request failed: ${(err as Error).message}`);
      refuse(req, res, { status: 500, message: "Internal error" });
    }
  }

  /** Ends every MCP session (their open calls are cancelled). */
  close(): Promise<void> {
    return this.#sessions.close();
  }

  /** The session a path names, once its token checks out. */
  #resolve(path: string, req: IncomingMessage): Resolved<Session> {
    const parts = path.slice(MCP_PREFIX.length + 1).split("/");
    const [id, given, ...rest] = parts;
    const how =
      "send 'Authorization: Bearer <token>' (tether serve's token file) to /mcp/<session>, " +
      "or use /mcp/<session>/<token>";
    if (!path.startsWith(`${MCP_PREFIX}/`) || id === undefined || !SESSION_ID.test(id) || rest.length > 0)
      return { refused: { status: 404, message: "Not found: the MCP endpoint of a session is /mcp/<session id>" } };
    const authorized =
      given === undefined
        ? bearerMatches(req.headers.authorization, this.#options.token)
        : tokenMatches(given, this.#options.token);
    // Checked before the session: a client without the token learns nothing of which sessions are open.
    if (!authorized) return { refused: unauthorized(how) };
    const session = this.#options.session(id);
    if (session === null)
      return {
        refused: {
          status: 404,
          message: `No session '${id}' is open on this server: open it with session.open (docs/api.md), then connect`,
        },
      };
    return { target: session };
  }
}
