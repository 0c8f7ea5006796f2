/**
 * Performs a brokered request with undici: every hop judged, the connection
 * made to the judged address (no second lookup), redirects followed by hand,
 * the body bounded, the time bounded by the invocation's deadline.
 */
import type { LookupFunction } from "node:net";
import { Agent, request } from "undici";
import { judge, type EgressPolicy, type Resolver, type Verdict } from "./judge.js";
import { guardRequest } from "./method-guard.js";

export interface BrokeredRequest {
  readonly url: string;
  readonly method: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array | null;
}

export interface FetchLimits {
  readonly maxBodyBytes: number;
  readonly maxRedirects: number;
  /** Epoch ms by which the whole exchange must be over. */
  readonly deadlineAt: number;
}

export interface FetchResponse {
  readonly status: number;
  readonly headers: Array<[string, string]>;
  readonly body: Uint8Array;
  /** The URL that answered (after redirects). */
  readonly url: string;
}

export type FetchOutcome =
  | { readonly ok: true; readonly response: FetchResponse; readonly verdict: Verdict & { allowed: true } }
  | { readonly ok: false; readonly verdict: Verdict & { allowed: false } }
  | { readonly ok: false; readonly failure: string; readonly rule: string; readonly verdict?: undefined };

/** Told about every hop's verdict (the audit writes one row per hop). */
export type HopObserver = (url: string, verdict: Verdict) => void;

/** Asked before each redirect hop is sent (the hook stage); a string refuses it, naming the rule. */
export type HopGate = (url: string) => Promise<{ rule: string; reason: string } | null>;

export interface HopCallbacks {
  /** Every hop's policy verdict. */
  readonly judged?: HopObserver;
  /** A hop that was sent and answered with a redirect (so it is audited too). */
  readonly redirected?: (url: string, verdict: Verdict & { allowed: true }, status: number) => void;
  /** Asked for every hop after the first (the first was asked by the caller). */
  readonly gate?: HopGate;
}

// Never forwarded: hop-by-hop and proxy headers, and what undici sets itself.
const STRIPPED = new Set(["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length", "expect", "forwarded", "via", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"]);
// Dropped when a redirect crosses origins.
const CREDENTIALS = new Set(["authorization", "cookie", "proxy-authorization"]);

function cleanHeaders(headers: ReadonlyArray<readonly [string, string]>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [name, value] of headers) {
    const key = String(name).toLowerCase();
    if (STRIPPED.has(key) || key.startsWith("proxy-")) continue;
    if (/[\r\n]/.test(String(value)) || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(key)) continue;
    out.push([key, String(value)]);
  }
  return out;
}

/** Keep-alive agents pinned to one judged address, reused only for that same (origin, address). */
const agents = new Map<string, Agent>();
const MAX_AGENTS = 64;

function pinnedAgent(origin: string, address: string, family: 4 | 6): Agent {
  const key = `${origin}|${address}`;
  let agent = agents.get(key);
  if (agent !== undefined) {
    agents.delete(key);
    agents.set(key, agent); // most recently used last
    return agent;
  }
  const lookup: LookupFunction = (_hostname, options, callback) => {
    // The judged address, always: the name is never looked up again.
    if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
  agent = new Agent({ connect: { lookup }, keepAliveTimeout: 10_000, connections: 8 });
  agents.set(key, agent);
  if (agents.size > MAX_AGENTS) {
    const [oldest, old] = agents.entries().next().value as [string, Agent];
    agents.delete(oldest);
    void old.close();
  }
  return agent;
}

/** Closes every pooled connection (broker shutdown, tests). */
export async function closeEgressAgents(): Promise<void> {
  const all = [...agents.values()];
  agents.clear();
  await Promise.all(all.map((a) => a.close()));
}

async function readBounded(body: AsyncIterable<Uint8Array>, max: number): Promise<Uint8Array | null> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (total > max) return null;
    chunks.push(chunk);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

export async function brokeredFetch(req: BrokeredRequest, policy: EgressPolicy, resolve: Resolver, limits: FetchLimits, hops: HopCallbacks = {}): Promise<FetchOutcome> {
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    return { ok: false, failure: `'${String(req.url).slice(0, 200)}' is not a URL`, rule: "url" };
  }
  const refused = guardRequest({ url, method: req.method, headers: req.headers, body: req.body }); // before any hop (method-guard.ts)
  if (refused !== null) {
    hops.judged?.(url.href, refused);
    return { ok: false, verdict: refused };
  }
  let method = req.method.toUpperCase();
  let body = req.body;
  let headers = cleanHeaders(req.headers);
  for (let hop = 0; ; hop++) {
    const verdict = await judge(url, method, policy, resolve);
    hops.judged?.(url.href, verdict);
    if (!verdict.allowed) return { ok: false, verdict };
    if (hop > 0 && hops.gate !== undefined) {
      const blocked = await hops.gate(url.href);
      if (blocked !== null) {
        const denial = { allowed: false as const, rule: blocked.rule, reason: blocked.reason };
        return { ok: false, verdict: denial };
      }
    }
    const remaining = limits.deadlineAt - Date.now();
    if (remaining <= 0) return { ok: false, failure: "the invocation's deadline passed before the request was sent", rule: "limit:deadline" };
    let res;
    try {
      res = await request(url, {
        method: method as "GET",
        headers: Object.fromEntries(headers),
        body: body ?? null,
        dispatcher: pinnedAgent(url.origin, verdict.address, verdict.family),
        // undici's own timers are coarse (they can fire ~0.5 s early): the signal is exact.
        headersTimeout: 0,
        bodyTimeout: 0,
        signal: AbortSignal.timeout(remaining),
      });
    } catch (err) {
      return { ok: false, failure: `request to ${url.origin} failed: ${(err as Error).message}`, rule: verdict.rule };
    }
    const location = res.headers.location;
    if (res.statusCode >= 300 && res.statusCode < 400 && location !== undefined) {
      res.body.resume();
      hops.redirected?.(url.href, verdict, res.statusCode);
      if (hop + 1 > limits.maxRedirects) return { ok: false, failure: `more than ${limits.maxRedirects} redirects`, rule: "limit:redirects" };
      let next: URL;
      try {
        next = new URL(Array.isArray(location) ? location[0]! : location, url);
      } catch {
        return { ok: false, failure: "a redirect's Location is not a URL", rule: "url" };
      }
      if (next.origin !== url.origin) headers = headers.filter(([name]) => !CREDENTIALS.has(name));
      if (res.statusCode === 303 || ((res.statusCode === 301 || res.statusCode === 302) && method === "POST")) {
        method = method === "HEAD" ? "HEAD" : "GET";
        body = null;
        headers = headers.filter(([name]) => name !== "content-type");
      }
      url = next;
      continue;
    }
    let bytes: Uint8Array | null;
    try {
      bytes = await readBounded(res.body, limits.maxBodyBytes);
    } catch (err) {
      return { ok: false, failure: `reading the body from ${url.origin} failed: ${(err as Error).message}`, rule: verdict.rule };
    }
    if (bytes === null) {
      res.body.destroy();
      return { ok: false, failure: `the response body exceeds ${limits.maxBodyBytes} bytes`, rule: "limit:body" };
    }
    const outHeaders: Array<[string, string]> = [];
    for (const [name, value] of Object.entries(res.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) outHeaders.push([name, v]);
    }
    return { ok: true, response: { status: res.statusCode, headers: outHeaders, body: bytes, url: url.href }, verdict };
  }
}
