/**
 * A scriptable `net` for tests: routes stand for the approved `[net] allow`
 * rules and the servers behind them. A request no route takes is refused as the
 * broker refuses it (`manifest:no-match`); a route may answer a response, a
 * refusal by a named rule, or an unreachable target, each worded as the
 * broker's `net.fetch` (broker/caps/net-fetch.ts, docs/egress.md).
 */
import * as v from "valibot";
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

/**
 * The network as an extension's tests see it. `requests` records each
 * request that reached a route or was refused, in order.
 *
 * @example
 * ```ts
 * import { FakeNet } from "@tether/ext/testing";
 * const net = new FakeNet({
 *   "GET https://api.example.com/v1/forecast?city=Lisbon": { json: { summary: "sunny" } },
 *   "https://api.example.com/v1/slow*": { unreachable: "connect ETIMEDOUT" },
 *   "https://evil.example/*": { refuse: "operator:deny *.evil.example" },
 * });
 * ```
 */
export class FakeNet {
  readonly requests: FakeRequest[] = [];

  /** `extension` is the name the broker's `manifest:no-match` refusal names. */
  constructor(
    readonly routes: Routes = {},
    readonly extension = "extension",
  ) {}

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
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return refused(
        "denied",
        "url",
        `net.fetch refused: scheme '${url.protocol.replace(/:$/, "")}' is not allowed (${url.protocol}//${url.host})`,
      );
    }
    if (url.username !== "" || url.password !== "")
      return refused(
        "denied",
        "url",
        `net.fetch refused: credentials in the URL (userinfo) are not allowed (${url.protocol}//${url.host})`,
      );
    const request: FakeRequest = {
      method,
      url: url.href,
      headers: parsed.output.headers.map(([name, value]) => [name.toLowerCase(), value] as const),
      body: parsed.output.body === null ? null : fromBase64(parsed.output.body),
      ...(parsed.output.secret !== undefined ? { secret: parsed.output.secret } : {}),
    };
    this.requests.push(request);
    const key = Object.keys(this.routes).find((k) => matches(k, method, url.href));
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
