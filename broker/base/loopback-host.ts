/**
 * Requests to a server that listens on loopback for this machine's own
 * clients: its Host must be a loopback name (a page whose own name was made to
 * point at 127.0.0.1 — DNS rebinding — names itself), and a browser's Origin,
 * when it sends one, must be one of this server's own loopback origins.
 */
import type { IncomingMessage } from "node:http";

/** The names a client on this machine reaches a loopback server by. */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** The host part of a Host header (`127.0.0.1:8080` → `127.0.0.1`, `[::1]:80` → `[::1]`), lower-cased. */
export function hostName(host: string): string {
  const m = /^(\[[^\]]*\]|[^:]*)(?::\d+)?$/.exec(host);
  return (m?.[1] ?? host).toLowerCase();
}

/**
 * Why a request may not be served here, or null: the Host must be a loopback
 * name. Over a Unix socket too: a browser reaches one only through a forward
 * from a TCP port (socat), and the forward passes on whatever Host the page's
 * name gave.
 */
export function hostProblem(req: IncomingMessage): string | null {
  const host = req.headers.host;
  if (host === undefined || !LOOPBACK_HOSTS.has(hostName(host)))
    return `the Host '${host ?? ""}' is not a loopback name (127.0.0.1, localhost, [::1])`;
  return null;
}

/**
 * Why a request's Origin is refused, or null: absent (not a browser's
 * cross-origin request), or exactly `http://<loopback name>:<port>` of this
 * server. Any other page — another site, another port on this machine, a
 * `null` origin (a sandboxed frame, a file) — is refused.
 */
export function originProblem(req: IncomingMessage, port: number): string | null {
  const origin = req.headers.origin;
  if (origin === undefined) return null;
  let url: URL | null = null;
  try {
    url = new URL(origin);
  } catch {
    // "null" and other non-URLs: no page of this server.
  }
  const own =
    url !== null &&
    url.protocol === "http:" &&
    LOOPBACK_HOSTS.has(url.hostname.toLowerCase()) &&
    (url.port === "" ? "80" : url.port) === String(port) &&
    url.pathname === "/" &&
    origin === url.origin;
  return own ? null : `the request came from another origin (${origin.slice(0, 200)})`;
}
