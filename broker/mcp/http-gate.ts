/**
 * The gate every MCP request over HTTP passes before the SDK reads a byte,
 * wherever it is served (`tether mcp --http`, or under `tether serve`):
 *   Host a loopback name? (403) ─► Origin absent or this server's own? (403)
 *   ─► the endpoint and its token, as the caller resolves them (404 / 401)
 *   ─► a body of at most MAX_BODY_BYTES, JSON within CALLER_JSON_BOUNDS (413 / 400).
 * Every refusal ends its connection (nothing more of that request is read).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { CALLER_JSON_BOUNDS, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import { hostProblem, originProblem } from "../base/loopback-host.js";
import { HeldBytes } from "../../jail-runtime/wire/held-bytes.js";
import { bufferOf } from "../base/buffer-of.js";

/** The largest request body read (an MCP message from a client; tool arguments included). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** A request the gate turns away: its status, message and any extra headers. */
export interface Refusal {
  readonly status: number;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** What the caller makes of a request's path: refused, or the thing it names (a session, the endpoint). */
export type Resolved<T> = { readonly refused: Refusal } | { readonly target: T };

/** A missing or wrong token: the answer names both ways to send it. */
export function unauthorized(how: string): Refusal {
  return {
    status: 401,
    message: `Unauthorized: ${how}`,
    headers: { "www-authenticate": 'Bearer realm="tether"' },
  };
}

/** Answers a refusal and ends the connection: nothing more of this request is read. */
export function refuse(req: IncomingMessage, res: ServerResponse, refusal: Refusal): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.once("finish", () => req.destroy());
  res.writeHead(refusal.status, { "content-type": "application/json", connection: "close", ...refusal.headers });
  // A JSON-RPC error with no id: what the SDK's own transport answers for a request it refuses.
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: refusal.message }, id: null }));
}

/**
 * The request's body, at most `MAX_BODY_BYTES` (null: it was longer), held in one buffer
 * (`HeldBytes`): a body sent a byte at a time arrives a Buffer a byte, ~200 bytes of memory each if kept.
 */
async function readBody(req: IncomingMessage): Promise<string | null> {
  const held = new HeldBytes(MAX_BODY_BYTES);
  for await (const chunk of req as AsyncIterable<Buffer>) if (!held.append(chunk)) return null;
  return bufferOf(held.view()).toString("utf8");
}

export interface GateOptions<T> {
  /** The server's loopback port (its own Origin); null over a Unix socket, where no Origin is its own. */
  readonly port: number | null;
  /** What the path (query left off) names, once Host and Origin passed: the target or a refusal. */
  readonly resolve: (path: string, req: IncomingMessage) => Resolved<T>;
}

/** What passed the gate: the target the path named and the parsed body (undefined for GET and DELETE). */
export interface Admitted<T> {
  readonly target: T;
  readonly body: unknown;
}

/** Runs the gate; null when the request was refused (and answered). */
export async function admit<T>(
  req: IncomingMessage,
  res: ServerResponse,
  options: GateOptions<T>,
): Promise<Admitted<T> | null> {
  const host = hostProblem(req);
  if (host !== null) return refused(req, res, { status: 403, message: `Forbidden: ${host}` });
  const origin = options.port === null ? ownlessOrigin(req) : originProblem(req, options.port);
  if (origin !== null) return refused(req, res, { status: 403, message: `Forbidden: ${origin}` });
  const resolved = options.resolve((req.url ?? "/").split("?")[0]!, req);
  if ("refused" in resolved) return refused(req, res, resolved.refused);
  let body: unknown;
  if (req.method === "POST") {
    const text = await readBody(req);
    if (text === null)
      return refused(req, res, { status: 413, message: `Payload too large: at most ${MAX_BODY_BYTES} bytes` });
    try {
      body = parseBoundedJson(text, CALLER_JSON_BOUNDS);
    } catch (err) {
      return refused(req, res, { status: 400, message: `Parse error: ${(err as Error).message}` });
    }
  }
  return { target: resolved.target, body };
}

function refused(req: IncomingMessage, res: ServerResponse, refusal: Refusal): null {
  refuse(req, res, refusal);
  return null;
}

/** Over a Unix socket no page is the server's own: any Origin is refused. */
function ownlessOrigin(req: IncomingMessage): string | null {
  const origin = req.headers.origin;
  return origin === undefined ? null : `the request came from another origin (${origin.slice(0, 200)})`;
}
