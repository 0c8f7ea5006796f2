/**
 * What crosses between an HTTP client and a service, and what does not: the
 * request's headers less credentials and hop-by-hop ones; its body read up to
 * the route's bound (413 past it) within a read deadline (408); the answer's
 * headers less cookies, hop-by-hop ones and what the broker itself sets.
 */
import type { IncomingMessage } from "node:http";
import { MAX_HEADER_CHARS, MAX_SERVICE_HEADERS } from "../../jail-runtime/wire/service-kinds.js";
import { HeldBytes } from "../../jail-runtime/wire/held-bytes.js";
import { bufferOf } from "../base/buffer-of.js";

/** Hop-by-hop headers (RFC 9110 §7.6.1) and their kin: about one connection, never passed on. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);
/** Request headers a service never sees: the serve token and the client's credentials. */
const REQUEST_DROPPED = new Set(["authorization", "proxy-authorization", "cookie"]);
/**
 * Response headers a service may set: an allowlist, since a page on the broker's
 * origin could otherwise speak for it (Set-Cookie, Clear-Site-Data, Refresh, a
 * Location to javascript:, its own CSP, CORS grants). Custom `x-` headers pass.
 */
const RESPONSE_ALLOWED = new Set([
  "content-type",
  "content-language",
  "content-disposition",
  "content-range",
  "accept-ranges",
  "cache-control",
  "expires",
  "etag",
  "last-modified",
  "vary",
  "age",
  "retry-after",
  "location",
  "link",
]);
/** `x-` headers the broker sets or that act as policy, not data. */
const RESPONSE_X_DROPPED = new Set([
  "x-content-type-options",
  "x-frame-options",
  "x-xss-protection",
  "x-dns-prefetch-control",
  "x-permitted-cross-domain-policies",
]);

/**
 * What every page a service answers carries, whatever the service said: its own opaque
 * origin (`sandbox` without `allow-same-origin`), so its scripts can neither read the
 * console nor post to it as the console's origin, nor frame it.
 */
export const SERVICE_PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": "sandbox allow-scripts allow-forms allow-popups allow-downloads; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "cross-origin-resource-policy": "same-origin",
  "referrer-policy": "no-referrer",
};

/** A Location the client may follow: a path on this server, or an http(s) URL. */
function safeLocation(value: string): boolean {
  if (value.startsWith("/") && !value.startsWith("//") && !value.startsWith("/\\")) return true;
  try {
    const u = new URL(value);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]{1,256}$/;

function dropHopByHop(name: string, connection: string | undefined): boolean {
  if (HOP_BY_HOP.has(name) || name.startsWith("proxy-")) return true;
  // Headers the Connection header names are hop-by-hop too.
  return (connection ?? "")
    .toLowerCase()
    .split(",")
    .some((n) => n.trim() === name);
}

/**
 * The request's headers a service is handed: lowercase,
 * credentials and hop-by-hop ones gone, bounded in count and size.
 */
export function requestHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  const connection = req.headers.connection;
  for (const [name, value] of Object.entries(req.headers)) {
    if (Object.keys(out).length >= MAX_SERVICE_HEADERS) break;
    if (REQUEST_DROPPED.has(name) || dropHopByHop(name, connection) || !TOKEN.test(name) || value === undefined)
      continue;
    const text = Array.isArray(value) ? value.join(", ") : value;
    if (text.length <= MAX_HEADER_CHARS) out[name] = text;
  }
  return out;
}

/**
 * The answer's headers the client gets: the allowlisted ones with valid names
 * and values, a Location only to a path or http(s); then the broker's own.
 */
export function responseHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [raw, value] of Object.entries(headers)) {
    const name = raw.toLowerCase();
    if (!TOKEN.test(name) || dropHopByHop(name, headers["connection"] ?? headers["Connection"])) continue;
    if (!RESPONSE_ALLOWED.has(name) && !(name.startsWith("x-") && !RESPONSE_X_DROPPED.has(name))) continue;
    // No control characters: a value may not split the response.
    if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) continue;
    if (name === "location" && !safeLocation(value.trim())) continue;
    out[name] = value;
  }
  return { ...out, ...SERVICE_PAGE_HEADERS };
}

export type BodyRead =
  | { readonly ok: true; readonly body: Buffer }
  | { readonly ok: false; readonly status: 408 | 413 };

/**
 * Reads the body up to `max` bytes within `deadlineMs`; stops reading
 * at the bound or the deadline (the caller closes the connection).
 */
export function readBody(req: IncomingMessage, max: number, deadlineMs: number): Promise<BodyRead> {
  return new Promise((resolve) => {
    // One buffer however the client splits its body (`HeldBytes`).
    const held = new HeldBytes(max);
    let settled = false;
    const finish = (result: BodyRead) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off("data", onData);
      if (!result.ok) req.pause();
      resolve(result);
    };
    const timer = setTimeout(() => finish({ ok: false, status: 408 }), deadlineMs);
    timer.unref();
    const onData = (chunk: Buffer) => {
      if (!held.append(chunk)) return finish({ ok: false, status: 413 });
    };
    req.on("data", onData);
    req.once("end", () => finish({ ok: true, body: bufferOf(held.view()) }));
    req.once("error", () => finish({ ok: false, status: 408 }));
  });
}

/** A body as the payload carries it: UTF-8 text when it is that, else base64. */
export function encodeBody(body: Buffer): { body: string; body_encoding: "text" | "base64" } {
  const text = body.toString("utf8");
  if (Buffer.from(text, "utf8").equals(body)) return { body: text, body_encoding: "text" };
  return { body: body.toString("base64"), body_encoding: "base64" };
}
