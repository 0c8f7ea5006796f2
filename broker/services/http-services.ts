/**
 * `tether serve`'s plain HTTP side: `/ext/<extension>/<path>` answered by the
 * extension's `[[service]]` routes (docs/services.md). Each request is checked
 * in this order — the serve token (401, no detail), the route (404, naming
 * nothing), the method (405), the route's rate (429 + Retry-After), the
 * declared length (413 before any byte is read), the body as it arrives (413
 * at the bound, 408 past the read deadline) — then becomes one invocation of
 * kind `service` of the extension's daemon satellite. A failure is 502 with a
 * fixed body, a timeout 504: nothing of the extension's error reaches the client.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { MAX_SERVICE_BODY_BYTES, MAX_SERVICE_PATH_CHARS } from "../../jail-runtime/wire/service-kinds.js";
import type { SessionPayload } from "../../jail-runtime/wire/session-kinds.js";
import type { Logger } from "../base/log.js";
import { WireCode } from "../base/errors.js";
import type { KernelHost } from "../kernel/host.js";
import { DAEMON_SCOPE } from "../kernel/session-scope.js";
import { bearerMatches } from "../base/serve-token.js";
import { decodeSessionAnswer } from "../sessions/ask-session-kind.js";
import { encodeBody, readBody, requestHeaders, responseHeaders } from "./http-message.js";
import { mountedRoutes, routeMatches } from "./mounted.js";
import { ServiceRates } from "./rate.js";

export const EXT_PREFIX = "/ext/";
/** How long a client may take to send a request's body (408 past it). */
export const DEFAULT_BODY_READ_MS = 10_000;

const EXTENSION = /^[a-z][a-z0-9_-]{0,63}$/;
const FIXED = {
  401: "",
  404: "Not found\n",
  405: "Method not allowed\n",
  408: "Request body too slow\n",
  413: "Request body too large\n",
  414: "Request path too long\n",
  429: "Too many requests\n",
  502: "The service failed\n",
  503: "tether serve is shutting down\n",
  504: "The service did not answer in time\n",
} as const;

export interface ServiceHttpOptions {
  readonly broker: KernelHost;
  readonly token: string;
  readonly log: Logger;
  readonly bodyReadMs?: number;
}

export class ServiceHttp {
  readonly #rates = new ServiceRates();
  readonly #bodyReadMs: number;

  constructor(private readonly options: ServiceHttpOptions) {
    this.#bodyReadMs = options.bodyReadMs ?? DEFAULT_BODY_READ_MS;
  }

  /** Answers one request whose path starts with `/ext/`; never throws. */
  async handle(req: IncomingMessage, res: ServerResponse, accepting: boolean): Promise<void> {
    try {
      await this.#handle(req, res, accepting);
    } catch (err) {
      this.options.log.info("tether serve: a service request failed", {
        error: err instanceof Error ? err.message : String(err),
      });
      if (!res.headersSent) fixed(res, 502);
      else res.destroy();
    }
  }

  async #handle(req: IncomingMessage, res: ServerResponse, accepting: boolean): Promise<void> {
    if (!accepting) return fixed(res, 503);
    // Checked before anything else about the request, as for a WebSocket: an unauthorised client learns nothing.
    if (!bearerMatches(req.headers.authorization, this.options.token))
      return fixed(res, 401, { "www-authenticate": 'Bearer realm="tether"' });
    const url = req.url ?? "/";
    if (url.length > MAX_SERVICE_PATH_CHARS) return fixed(res, 414);
    const q = url.indexOf("?");
    const fullPath = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? "" : url.slice(q + 1);
    const rest = fullPath.slice(EXT_PREFIX.length);
    const slash = rest.indexOf("/");
    const extension = slash < 0 ? rest : rest.slice(0, slash);
    const path = slash < 0 ? "/" : rest.slice(slash);
    // `..` or `.` segments are refused rather than resolved: a route sees the path as sent.
    if (!EXTENSION.test(extension) || path.split("/").some((s) => s === ".." || s === ".")) return fixed(res, 404);
    const routes = mountedRoutes(this.options.broker, extension).filter((r) => routeMatches(r, path));
    if (routes.length === 0) return fixed(res, 404);
    const method = (req.method ?? "GET").toUpperCase();
    const route = routes.find((r) => (r.methods as readonly string[]).includes(method));
    if (route === undefined)
      return fixed(res, 405, { allow: [...new Set(routes.flatMap((r) => r.methods))].join(", ") });
    const wait = this.#rates.take(`${extension}\u0000${route.name}`, route.rate_per_minute);
    if (wait > 0) return fixed(res, 429, { "retry-after": String(wait) });
    const declared = Number(req.headers["content-length"] ?? "0");
    if (!Number.isFinite(declared) || declared > route.max_body_bytes) return fixed(res, 413, { connection: "close" });
    const read = await readBody(req, Math.min(route.max_body_bytes, MAX_SERVICE_BODY_BYTES), this.#bodyReadMs);
    if (!read.ok) return fixed(res, read.status, { connection: "close" });
    const payload: SessionPayload<"service"> = {
      route: route.name,
      method,
      path,
      query,
      headers: requestHeaders(req),
      ...encodeBody(read.body),
    };
    const aborted = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) aborted.abort();
    });
    const { outcome } = await this.options.broker
      .scope(DAEMON_SCOPE)
      .invoke(extension, "service", route.name, JSON.stringify(payload), { signal: aborted.signal });
    if (!outcome.ok) {
      this.options.log.info("tether serve: a service failed", {
        extension,
        service: route.name,
        code: outcome.error.code,
      });
      return fixed(res, outcome.error.code === WireCode.timeout ? 504 : 502);
    }
    const decoded = decodeSessionAnswer("service", outcome.value);
    if (!decoded.ok) return fixed(res, 502);
    const answer = decoded.answer;
    const body =
      answer.body_encoding === "base64" ? Buffer.from(answer.body, "base64") : Buffer.from(answer.body, "utf8");
    if (body.length > MAX_SERVICE_BODY_BYTES) return fixed(res, 502);
    const headers = responseHeaders(answer.headers);
    res.writeHead(answer.status, { ...headers, "content-length": String(body.length) });
    res.end(method === "HEAD" ? undefined : body);
  }
}

/** A response the broker writes itself, with its fixed body. */
function fixed(res: ServerResponse, status: keyof typeof FIXED, extra: Record<string, string> = {}): void {
  const body = FIXED[status];
  res.writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    "content-length": String(Buffer.byteLength(body)),
    ...extra,
  });
  res.end(body);
}
