/**
 * What a request says besides its request line, that could make a server do
 * something other than what the judge allowed. Checked once, before the first
 * hop is judged; a refusal is a denied verdict like the judge's own.
 *
 * - **Override headers** (`OVERRIDE_HEADERS`) are refused, whatever they name:
 *   a server that honours `X-HTTP-Method-Override: DELETE` runs a DELETE the
 *   rule judged as a GET, and one that honours `X-Original-URL: /admin` serves
 *   a path the prefix rule never saw. They are refused rather than stripped,
 *   and refused even when they name an allowed method: the broker cannot know
 *   which of them a server honours, a silently changed request is harder to
 *   debug than a refusal, the answer does not depend on which rule (or which
 *   redirect hop) matched, and an extension never needs them — `net.fetch`
 *   sends any method itself.
 * - **`_method` in the query** is refused for the same reason (frameworks read
 *   it as the method of a POST).
 * - **A body on GET, HEAD, OPTIONS or TRACE** is refused, not dropped: such a
 *   rule was approved as a read, and servers and caches disagree about what a
 *   body there means. An empty body is no body.
 * - **CONNECT** is refused: it asks the server to open a tunnel elsewhere.
 */
import type { Verdict } from "./judge.js";

/** Headers that ask a server to use another method, or another path, than the request line's. */
export const OVERRIDE_HEADERS: readonly string[] = [
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  "x-http-method-overwrite",
  "x-original-method",
  "x-original-url",
  "x-rewrite-url",
  "x-override-url",
];

/** Methods whose requests carry no body. */
export const BODILESS_METHODS: readonly string[] = ["GET", "HEAD", "OPTIONS", "TRACE"];

const OVERRIDES = new Set(OVERRIDE_HEADERS);

export interface GuardedRequest {
  readonly url: URL;
  readonly method: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array | null;
}

/** The refusal of a request whose headers, query or body could change what it does, or null. Pure. */
export function guardRequest(req: GuardedRequest): (Verdict & { allowed: false }) | null {
  const method = req.method.toUpperCase();
  if (method === "CONNECT")
    return refuse("request:method", "CONNECT asks the server for a tunnel to another host, which no rule can judge");
  for (const [name] of req.headers) {
    const key = String(name).trim().toLowerCase();
    if (OVERRIDES.has(key)) {
      return refuse(
        `request:override ${key}`,
        `the header '${key}' asks the server to change the ${key.endsWith("url") ? "path" : "method"} ` +
          `the rules judged; send the request with that method or URL instead`,
      );
    }
  }
  for (const key of req.url.searchParams.keys()) {
    if (key.toLowerCase() === "_method")
      return refuse(
        "request:override _method",
        "the query parameter '_method' asks the server to change the " +
          "method the rules judged; send the request with that method instead",
      );
  }
  if (req.body !== null && req.body.length > 0 && BODILESS_METHODS.includes(method)) {
    return refuse(
      "request:body",
      `a ${method} request carries no body (this one has ${req.body.length} bytes); ` +
        `send it with a method that takes one, under a rule that allows that method`,
    );
  }
  return null;
}

function refuse(rule: string, reason: string): Verdict & { allowed: false } {
  return { allowed: false, rule, reason };
}
