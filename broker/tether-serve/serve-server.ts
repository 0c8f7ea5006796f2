/**
 * `tether serve` as composed: the API server (server.ts) with the operator
 * console mounted under `/console` on its listener (docs/console.md), the
 * extension pages under `/ext/` on the pages' own listener (docs/services.md),
 * and the refresher that renews stored sign-ins as they fall due while it runs.
 * MCP over Streamable HTTP is mounted under `/mcp/<session>` on the API
 * listener (broker/mcp/serve-mcp.ts, docs/mcp.md): the sessions the server's
 * clients opened, for MCP clients to attach to.
 * The server knows none of them; they are routes and a companion registered
 * with it here.
 *
 * **Extension pages never share the console's origin**: `/ext/` is answered
 * only by the pages listener (another port, or another socket), so a page an
 * extension serves is another origin than the console even before its CSP
 * sandbox makes it an opaque one (docs/services.md#pages-and-the-console); the
 * console's listener answers `/ext/` with a pointer to it.
 */
import { CONSOLE_PREFIX, ConsoleHttp } from "../console/console.js";
import { loginsOf } from "../login/logins.js";
import { MCP_PREFIX, ServeMcp } from "../mcp/serve-mcp.js";
import { packageVersion } from "../base/version.js";
import { Refresher } from "../login/refresher.js";
import { EXT_PREFIX, ServiceHttp } from "../services/http-services.js";
import { plainText } from "../serve/plain-text.js";
import { ApiServer, type ApiServerOptions } from "../serve/server.js";

export interface ServeOptions extends ApiServerOptions {
  /** How long an HTTP client may take to send a service request's body (default 10 s). */
  readonly serviceBodyMs?: number;
  /** How long a console sign-in lasts without a request (default 30 minutes; docs/console.md). */
  readonly consoleIdleMs?: number;
  /** How long a console form body may take to arrive (default 10 s; then 408). */
  readonly consoleBodyMs?: number;
}

export class ServeServer extends ApiServer {
  readonly #mcp: ServeMcp;

  constructor(options: ServeOptions) {
    super(options);
    const sessions = this.liveSessions();
    this.alongside(new Refresher(loginsOf(options.broker), options.log));
    const services = new ServiceHttp({
      broker: options.broker,
      token: options.token,
      log: options.log,
      ...(options.serviceBodyMs !== undefined ? { bodyReadMs: options.serviceBodyMs } : {}),
    });
    const operatorConsole = new ConsoleHttp({
      broker: options.broker,
      token: options.token,
      log: options.log,
      sessions,
      accepting: () => this.accepting,
      ...(options.consoleIdleMs !== undefined ? { idleMs: options.consoleIdleMs } : {}),
      ...(options.consoleBodyMs !== undefined ? { bodyMs: options.consoleBodyMs } : {}),
    });
    // The operator console: pages over the store and this server's sessions.
    this.mount("api", CONSOLE_PREFIX, (req, res) => operatorConsole.handle(req, res));
    // An extension's page is never answered on the console's origin: only a pointer to its own.
    this.mount("api", EXT_PREFIX, (_req, res) =>
      plainText(
        res,
        404,
        `Extension pages are served on their own ` +
          `origin: ${this.pagesUrl ?? "the pages listener"}${EXT_PREFIX}<name>/… (docs/services.md)\n`,
      ),
    );
    this.mount("pages", EXT_PREFIX, (req, res) => services.handle(req, res, this.accepting));
    // MCP clients attach to the sessions this server's clients opened.
    this.#mcp = new ServeMcp({
      token: options.token,
      version: packageVersion(),
      session: (id) => (this.accepting ? sessions.get(id) : null),
      port: () => this.apiPort,
      onNote: (line) => options.log.info(line),
    });
    this.mount("api", MCP_PREFIX, (req, res) => this.#mcp.handle(req, res));
  }

  override async shutdown(hurry: Promise<unknown>): Promise<void> {
    try {
      await super.shutdown(hurry);
    } finally {
      // Each session's close ended its MCP sessions already; whatever remains goes now.
      await this.#mcp.close();
    }
  }
}
