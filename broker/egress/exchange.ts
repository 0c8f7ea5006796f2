/**
 * One brokered exchange as a sequence of hops: the request as it stands now
 * (URL, method, headers, body) and how a redirect changes it. Judging and
 * sending each hop is the capability pipeline's job (broker/caps/net-fetch.ts);
 * this only holds the state between hops.
 */

// Never forwarded: hop-by-hop and proxy headers, and what undici sets itself.
export const NEVER_FORWARDED: readonly string[] = [
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  "expect",
  "forwarded",
  "via",
  "x-forwarded-for",
  "x-forwarded-host",
  "x-forwarded-proto",
];
const STRIPPED = new Set(NEVER_FORWARDED);
// Dropped when a redirect crosses origins.
const CREDENTIALS = new Set(["authorization", "cookie", "proxy-authorization"]);

export function cleanHeaders(headers: ReadonlyArray<readonly [string, string]>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [name, value] of headers) {
    const key = String(name).toLowerCase();
    if (STRIPPED.has(key) || key.startsWith("proxy-")) continue;
    if (/[\r\n]/.test(String(value)) || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(key)) continue;
    out.push([key, String(value)]);
  }
  return out;
}

export interface BrokeredRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array | null;
}

export class Exchange {
  url: URL;
  method: string;
  headers: Array<[string, string]>;
  body: Uint8Array | null;
  /** Redirects followed so far. */
  redirects = 0;

  private constructor(url: URL, req: BrokeredRequest) {
    this.url = url;
    this.method = req.method.toUpperCase();
    this.headers = cleanHeaders(req.headers);
    this.body = req.body;
  }

  /** The exchange, or why its URL is not one. */
  static start(req: BrokeredRequest): Exchange | { error: string } {
    try {
      return new Exchange(new URL(req.url), req);
    } catch {
      return { error: `'${String(req.url).slice(0, 200)}' is not a URL` };
    }
  }

  /** Moves to the redirect's target (RFC 9110 §15.4); an error when its Location is not a URL. */
  follow(location: string, status: number): { error: string } | null {
    let next: URL;
    try {
      next = new URL(location, this.url);
    } catch {
      return { error: "a redirect's Location is not a URL" };
    }
    if (next.origin !== this.url.origin) this.headers = this.headers.filter(([name]) => !CREDENTIALS.has(name));
    if (status === 303 || ((status === 301 || status === 302) && this.method === "POST")) {
      this.method = this.method === "HEAD" ? "HEAD" : "GET";
      this.body = null;
      this.headers = this.headers.filter(([name]) => name !== "content-type");
    }
    this.url = next;
    this.redirects++;
    return null;
  }
}
