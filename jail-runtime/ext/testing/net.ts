/**
 * A scriptable `net` for tests: routes stand for the servers behind the
 * extension's approved `[net] allow` rules. Given the rules (`allow`; the kit
 * reads them from manifest.toml), each request is first judged by the
 * broker's own matcher (egress.ts): one no rule allows is refused as the
 * broker refuses it (`manifest:no-match`, `path:…`) whatever the routes say,
 * and one allowed that no route takes fails as an unanswered request would.
 * Without rules, a request no route takes is refused `manifest:no-match`. A
 * route may answer a response, a refusal by a named rule, or an unreachable
 * target, each worded as the broker's `net.fetch` (broker/caps/net-fetch.ts,
 * docs/egress.md).
 */
import * as v from "valibot";
import { ApprovedRules, urlRefusal } from "./egress.js";
import { refused, type CapReply } from "./reply.js";

/** A response a route answers: JSON (`json`), text or bytes (`body`), 200 unless `status` says otherwise. */
export interface Respond {
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
  readonly json?: unknown;
  /** The URL that answered (after redirects); the request's URL when left out. */
  readonly url?: string;
}

/** The broker refuses the request: `rule` is what the refusal and the audit name. */
export interface Refuse {
  readonly refuse: string;
  /** What the message says before `(rule: …)`; each known rule has the broker's wording. */
  readonly reason?: string;
}

/** Allowed, but the target could not be reached (`unreachable`). */
export interface Unreachable {
  readonly unreachable: string;
}

/** A request as the broker received it. */
export interface FakeRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Uint8Array | null;
  /** The secret the request named (the broker would add its value; a test sees only the name). */
  readonly secret?: string;
}

export type RouteAnswer = Respond | Refuse | Unreachable;
/** An answer, or a function of the request that makes one. */
export type Route = RouteAnswer | ((request: FakeRequest) => RouteAnswer | Promise<RouteAnswer>);
/**
 * Routes by `"[METHOD ]URL"`: the URL is matched exactly (query included), or
 * as a prefix when it ends with `*`; with no method, any method matches.
 * The first route that matches answers.
 */
export type Routes = Readonly<Record<string, Route>>;

// The broker's argument schema and usage text (broker/caps/net-fetch.ts).
const Args = v.object({
  url: v.pipe(v.string(), v.maxLength(8192)),
  method: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z]{1,16}$/)), "GET"),
  headers: v.optional(
    v.pipe(
      v.array(v.tuple([v.pipe(v.string(), v.maxLength(256)), v.pipe(v.string(), v.maxLength(8192))])),
      v.maxLength(100),
    ),
    [],
  ),
  body: v.optional(v.nullable(v.string()), null),
  secret: v.optional(v.pipe(v.string(), v.regex(/^[a-z][a-z0-9_-]{0,63}$/))),
});

const where = (url: URL) => `${url.protocol}//${url.host}${url.pathname}`;

/** The broker's wording for the refusals a test most often scripts (docs/egress.md, "rule"). */
function brokerReason(rule: string, method: string, url: URL): string {
  if (rule.startsWith("operator:deny")) return `the operator's policy denies ${where(url)}`;
  if (rule === "session:offline") return "this session is offline: no egress";
  if (rule === "session:allow") return `the session's allow list does not include ${where(url)}`;
  if (rule === "dns") return `cannot resolve ${url.hostname}`;
  if (rule.startsWith("address:"))
    return (
      `${url.hostname} resolves to an address of class ${rule.slice("address:".length)}; only a rule naming that ` +
      `IP or CIDR may reach it`
    );
  return `${method} ${where(url)} is refused`;
}

function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

function matches(key: string, method: string, url: string): boolean {
  const space = key.indexOf(" ");
  const routeMethod = space > 0 ? key.slice(0, space).toUpperCase() : null;
  const pattern = space > 0 ? key.slice(space + 1).trim() : key;
  if (routeMethod !== null && routeMethod !== method) return false;
  if (pattern.endsWith("*")) return url.startsWith(pattern.slice(0, -1));
  let canonical: string;
  try {
    canonical = new URL(pattern).href;
  } catch {
    canonical = pattern;
  }
  return url === canonical;
}

export interface FakeNetOptions {
  /**
   * The approved `[net] allow` rules: each request is judged against them by
   * the broker's matcher before any route answers. Left out, routes alone
   * decide (a request no route takes is refused `manifest:no-match`).
   */
  readonly allow?: readonly string[];
  /** Where the rules come from, for the error a rule the broker would refuse throws. */
  readonly source?: string;
  /** Why no rules judge (said once, on stderr, at the first request): the kit could not read the manifest. */
  readonly unjudged?: string;
}

let warned = false;

/**
 * The network as an extension's tests see it. `requests` records each
 * request that reached a route or was refused, in order.
 *
 * @example
 * ```ts
 * import { FakeNet } from "@tether/ext/testing";
 * const net = new FakeNet(
 *   {
 *     "GET https://api.example.com/v1/forecast?city=Lisbon": { json: { summary: "sunny" } },
 *     "https://api.example.com/v1/slow*": { unreachable: "connect ETIMEDOUT" },
 *     "https://api.example.com/v1/admin*": { refuse: "operator:deny https://api.example.com/v1/admin" },
 *   },
 *   "weather",
 *   { allow: ["GET https://api.example.com/v1"] }, // POST, or /v2, is refused `manifest:no-match`
 * );
 * ```
 */
export class FakeNet {
  readonly requests: FakeRequest[] = [];
  /** The approved rules requests are judged against; null when routes alone decide. */
  readonly approved: ApprovedRules | null;
  readonly #unjudged: string | null;

  /** `extension` is the name the broker's `manifest:no-match` refusal names. */
  constructor(
    readonly routes: Routes = {},
    readonly extension = "extension",
    options: FakeNetOptions = {},
  ) {
    this.approved = options.allow === undefined ? null : new ApprovedRules(options.allow, options.source);
    this.#unjudged = this.approved === null ? (options.unjudged ?? null) : null;
  }

  /** Answers one `net.fetch` capability call (decoded arguments) as the broker does. */
  async serve(args: unknown): Promise<CapReply> {
    const parsed = v.safeParse(Args, args);
    if (!parsed.success)
      return refused("bad_arguments", "args", "net.fetch takes {url, method?, headers?, body? (base64), secret?}");
    const method = parsed.output.method.toUpperCase();
    let url: URL;
    try {
      url = new URL(parsed.output.url);
    } catch {
      return refused("denied", "url", `net.fetch refused: '${parsed.output.url.slice(0, 200)}' is not a URL`);
    }
    const bad = urlRefusal(url, method);
    if (bad !== null) return refused("denied", bad.rule, `net.fetch refused: ${bad.reason}`);
    const request: FakeRequest = {
      method,
      url: url.href,
      headers: parsed.output.headers.map(([name, value]) => [name.toLowerCase(), value] as const),
      body: parsed.output.body === null ? null : fromBase64(parsed.output.body),
      ...(parsed.output.secret !== undefined ? { secret: parsed.output.secret } : {}),
    };
    this.requests.push(request);
    const verdict = this.approved?.judge(url, method, this.extension);
    if (verdict !== undefined && !verdict.allowed)
      return refused("denied", verdict.rule, `net.fetch refused: ${verdict.reason}`);
    if (this.#unjudged !== null && !warned) {
      warned = true;
      console.warn(this.#unjudged);
    }
    const key = Object.keys(this.routes).find((k) => matches(k, method, url.href));
    if (key === undefined && verdict !== undefined) {
      const msg = `no route of the test answers ${method} ${where(url)} (allowed by the rule '${verdict.rule}')`;
      return { ok: false, error: { code: "unreachable", msg: `net.fetch failed: ${msg}` } };
    }
    if (key === undefined)
      return refused(
        "denied",
        "manifest:no-match",
        `net.fetch refused: no approved rule of '${this.extension}' allows ${method} ${where(url)}`,
      );
    const route = this.routes[key]!;
    const answer = typeof route === "function" ? await route(request) : route;
    if ("refuse" in answer) {
      if (answer.refuse.startsWith("hook:"))
        return refused("denied", answer.refuse, `Blocked by a hook: ${answer.reason ?? "blocked"}`);
      return refused(
        "denied",
        answer.refuse,
        `net.fetch refused: ${answer.reason ?? brokerReason(answer.refuse, method, url)}`,
      );
    }
    if ("unreachable" in answer)
      return { ok: false, error: { code: "unreachable", msg: `net.fetch failed: ${answer.unreachable}` } };
    return { ok: true, value: response(answer, url.href) };
  }
}

/** A response as the broker hands it over: lower-case header names, the whole body as bytes. */
function response(
  answer: Respond,
  url: string,
): { status: number; url: string; headers: Array<[string, string]>; body: Uint8Array } {
  const headers = Object.entries(answer.headers ?? {}).map(([name, value]): [string, string] => [
    name.toLowerCase(),
    value,
  ]);
  let body: Uint8Array;
  if (answer.json !== undefined) {
    body = new TextEncoder().encode(JSON.stringify(answer.json));
    if (!headers.some(([name]) => name === "content-type")) headers.push(["content-type", "application/json"]);
  } else if (typeof answer.body === "string") {
    body = new TextEncoder().encode(answer.body);
  } else {
    body = answer.body?.slice() ?? new Uint8Array(0);
  }
  return { status: answer.status ?? 200, url: answer.url ?? url, headers, body };
}
