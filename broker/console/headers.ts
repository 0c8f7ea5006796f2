/**
 * What every console response carries, whatever it is (a page, an asset, a
 * redirect, an error): a strict Content-Security-Policy (no inline script or
 * style, nothing from another origin), no sniffing, no referrer to other origins, no caching,
 * no framing.
 */
import type { ServerResponse } from "node:http";

export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; connect-src 'self'";

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CSP,
  "x-content-type-options": "nosniff",
  // Not no-referrer: under it Chromium sends `Origin: null` on the
  // console's own form posts, which the origin check must refuse.
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/** Sends one whole response with the security headers. */
export function send(
  res: ServerResponse,
  status: number,
  body: string | Buffer,
  headers: Record<string, string | string[]> = {},
): void {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    "content-type": "text/html; charset=utf-8",
    "content-length": String(bytes.length),
    ...headers,
  });
  res.end(bytes);
}

/** A 303 to `location` (after a form, or to the login page). */
export function redirect(res: ServerResponse, location: string, headers: Record<string, string | string[]> = {}): void {
  send(res, 303, "", { location, "content-type": "text/plain; charset=utf-8", ...headers });
}
