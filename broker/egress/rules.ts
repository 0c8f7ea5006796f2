/**
 * Egress rules: `[METHODS ]scheme://host[:port][/path-prefix]`.
 *
 * - scheme: `http` or `https`; a rule allows only its own scheme.
 * - host: a name (`api.example.com`), a leftmost wildcard (`*.example.com`:
 *   any name *under* example.com, at any depth, never the apex itself), an IP
 *   literal (`10.0.0.5`, `[fd00::1]`) or a CIDR in brackets (`[10.0.0.0/8]`,
 *   `[fd00::/48]`). Addresses are reachable only through rules that name them;
 *   an address rule stands for IPv4 in every form that carries it
 *   (`address-range.ts`), and what an allow rule may name is limited
 *   (`address-rule.ts`: no unspecified address, at most /16 or /48, loopback,
 *   link-local and metadata one address at a time).
 * - port: explicit, or the scheme's default; a rule never allows another port.
 * - wildcards over wildcard-DNS and dynamic-DNS domains are refused
 *   (`wildcard-dns.ts`), as are those over public suffixes (`hostname.ts`).
 * - path-prefix: matched on segment boundaries (`/v1` allows `/v1` and `/v1/x`,
 *   not `/v10`).
 * - METHODS: optional, comma-separated before a space (`GET,HEAD https://…`);
 *   none means any method.
 *
 * See docs/egress.md for the reasoning.
 */
import { parseAddressRange, rangeMatches, type AddressRange } from "./address-range.js";
import { addressRuleProblem } from "./address-rule.js";
import { parseIpLiteral as parseIpStrict } from "./ip-literal.js";
import { InvalidAddressError } from "./ip-text.js";
import { isTooBroad, normaliseHost } from "./hostname.js";
import { unsafePath } from "./path-guard.js";
import { wildcardDnsProblem } from "./wildcard-dns.js";

export interface EgressRule {
  /** The rule as written (what audit rows and denials name). */
  readonly text: string;
  readonly methods: readonly string[] | null;
  /** "*" only in an operator's host-only deny rule. */
  readonly scheme: "http" | "https" | "*";
  readonly host:
    | { readonly kind: "name"; readonly name: string }
    | { readonly kind: "wildcard"; readonly suffix: string }
    | { readonly kind: "ip"; readonly address: string; readonly range: AddressRange }
    | { readonly kind: "cidr"; readonly cidr: string; readonly range: AddressRange };
  /** null only in an operator's host-only deny rule: any port. */
  readonly port: number | null;
  /** "" for no prefix; otherwise starts with "/" and has no trailing "/". */
  readonly pathPrefix: string;
}

export class RuleError extends Error {
  override readonly name = "RuleError";
}

/** An IP literal's canonical form, null for a name, and a RuleError for a malformed literal. */
function parseIpLiteral(host: string): string | null {
  try {
    return parseIpStrict(host);
  } catch (err) {
    if (err instanceof InvalidAddressError) throw new RuleError(`'${host}' is not a valid IP address: ${err.message}`);
    throw err;
  }
}

const METHOD = /^[A-Z]+$/;
const DEFAULT_PORT = { http: 80, https: 443 } as const;

/**
 * Parses one rule; throws RuleError naming what is wrong. `allowBroad` is for
 * operator denies, which may also be a bare host pattern (`*.evil.example`):
 * any scheme, any port, any path.
 */
export function parseRule(text: string, options: { allowBroad?: boolean } = {}): EgressRule {
  const trimmed = text.trim();
  if (options.allowBroad && !trimmed.includes("://") && !trimmed.includes(" ")) {
    const probe = parseRule(`http://${trimmed}`, options);
    if (probe.pathPrefix !== "" || /:\d+$/.test(trimmed))
      throw new RuleError(`egress rule '${text}': a host-only rule has no port or path`);
    return { ...probe, text: trimmed, scheme: "*", port: null };
  }
  const fail = (why: string): never => {
    throw new RuleError(`egress rule '${text}': ${why}`);
  };
  let methods: string[] | null = null;
  let rest = trimmed;
  const space = trimmed.indexOf(" ");
  if (space >= 0) {
    methods = trimmed
      .slice(0, space)
      .split(",")
      .map((m) => m.trim().toUpperCase());
    if (methods.length === 0 || !methods.every((m) => METHOD.test(m)))
      fail("methods must be like GET,POST before the URL");
    rest = trimmed.slice(space + 1).trim();
  }
  const scheme = /^([a-z]+):\/\//i.exec(rest);
  if (!scheme) fail("expected scheme://host[:port][/path-prefix]");
  const schemeName = scheme![1]!.toLowerCase();
  if (schemeName !== "http" && schemeName !== "https")
    fail(`scheme '${schemeName}' is not allowed (http or https only)`);
  const proto = schemeName as "http" | "https";
  rest = rest.slice(scheme![0].length);
  if (rest.includes("@")) fail("userinfo (user@host) is not allowed in a rule");
  if (rest.includes("?") || rest.includes("#")) fail("a rule cannot hold a query or a fragment");

  let hostPart: string;
  let after: string;
  if (rest.startsWith("[")) {
    const close = rest.indexOf("]");
    if (close < 0) fail("unclosed '[' in the host");
    hostPart = rest.slice(0, close + 1);
    after = rest.slice(close + 1);
  } else {
    const end = rest.search(/[:/]/);
    hostPart = end < 0 ? rest : rest.slice(0, end);
    after = end < 0 ? "" : rest.slice(end);
  }
  let port: number = DEFAULT_PORT[proto];
  if (after.startsWith(":")) {
    const m = /^:(\d{1,5})/.exec(after);
    if (!m) fail("the port must be a number");
    port = Number(m![1]);
    if (port < 1 || port > 65535) fail("the port must be 1-65535");
    after = after.slice(m![0].length);
  }
  let pathPrefix = "";
  if (after !== "") {
    if (!after.startsWith("/")) fail("expected a path after the host");
    // A rule's path is a prefix. `/*` or `/**` at its end is how authors write "everything
    // under" (and how the test kit's routes read): the same prefix, said again.
    pathPrefix = after.replace(/(\/+\*{1,2})+\/*$/, "").replace(/\/+$/, "");
    if (pathPrefix.includes("*")) {
      const before = pathPrefix.slice(0, pathPrefix.indexOf("*")).replace(/\/[^/]*$/, "");
      const origin = `${proto}://${hostPart}${port === DEFAULT_PORT[proto] ? "" : `:${port}`}`;
      const rule = `${methods === null ? "" : `${methods.join(",")} `}${origin}${before}`;
      fail(
        "'*' inside a path matches nothing but a literal '*': a rule's path is a prefix, so " +
          `'${rule}' allows ${before === "" ? "every path" : `${before} and everything under it`}; ` +
          "write that (or one rule per path)",
      );
    }
    if (/%2f|%5c|\\/i.test(pathPrefix) || pathPrefix.split("/").some((seg) => seg === ".." || seg === "."))
      fail("the path prefix cannot hold dot segments or encoded slashes");
  }

  let host: EgressRule["host"];
  if (hostPart.startsWith("[")) {
    const inner = hostPart.slice(1, -1);
    if (inner.includes("/")) {
      const range = parseAddressRange(inner);
      if (range === null) fail(`'${inner}' is not a CIDR (address/prefix, no host bits set: e.g. [10.1.0.0/16])`);
      host = { kind: "cidr", cidr: range!.cidr, range: range! };
    } else {
      const ip = parseIpLiteral(hostPart);
      if (ip === null) fail(`'${inner}' is not an IP address`);
      host = { kind: "ip", address: ip!, range: parseAddressRange(ip!)! };
    }
  } else if (hostPart.startsWith("*.")) {
    let suffix = "";
    try {
      suffix = normaliseHost(hostPart.slice(2));
    } catch (err) {
      fail((err as Error).message);
    }
    if (suffix.includes("*")) fail("only one leftmost '*.' wildcard is allowed");
    const dns = wildcardDnsProblem(suffix);
    if (dns !== null && !options.allowBroad) fail(dns);
    const broad = isTooBroad(`*.${suffix}`);
    if (broad !== null && !options.allowBroad) fail(broad);
    host = { kind: "wildcard", suffix };
  } else {
    if (hostPart === "*" && !options.allowBroad) fail("'*' allows every host: too broad");
    if (hostPart.includes("*")) {
      if (hostPart === "*" && options.allowBroad) host = { kind: "wildcard", suffix: "" };
      else fail("'*' is only allowed as a leftmost '*.' label");
    }
    const ip = parseIpLiteral(hostPart);
    if (hostPart === "*") {
      host = { kind: "wildcard", suffix: "" };
    } else if (ip !== null) {
      // 2852039166, 0xa9fea9fe, 0251.0376.0251.0376, 169.254.43518: an address
      // in disguise. A rule says what it means, so the reviewer reads it.
      if (hostPart.toLowerCase() !== ip && !options.allowBroad)
        fail(`'${hostPart}' is the IP address ${ip} written another way: write it as ${ip}`);
      host = { kind: "ip", address: ip, range: parseAddressRange(ip)! };
    } else {
      let name = "";
      try {
        name = normaliseHost(hostPart);
      } catch (err) {
        fail((err as Error).message);
      }
      const broad = isTooBroad(name);
      if (broad !== null && !options.allowBroad) fail(broad);
      host = { kind: "name", name };
    }
  }
  if ((host!.kind === "ip" || host!.kind === "cidr") && !options.allowBroad) {
    const problem = addressRuleProblem(host!.range);
    if (problem !== null) fail(problem);
  }
  return { text: trimmed, methods, scheme: proto, host: host!, port, pathPrefix };
}

/** What a request looks like to the rules: all parts already normalised. */
export interface Target {
  readonly method: string;
  readonly scheme: "http" | "https";
  /** Normalised name (A-labels, no trailing dot), or null for an IP literal host. */
  readonly name: string | null;
  readonly port: number;
  readonly path: string;
}

function pathMatches(prefix: string, path: string): boolean {
  if (prefix === "") return true;
  if (/%2f|%5c/i.test(path)) return false; // an encoded slash could step out of the prefix at the server
  if (unsafePath(path) !== null) return false; // a server may read it differently (path-guard.ts)
  return path === prefix || path.startsWith(`${prefix}/`);
}

/** Does `rule` allow `target` by its URL parts (not yet its address)? */
export function matchesUrl(rule: EgressRule, target: Target): boolean {
  if ((rule.scheme !== "*" && rule.scheme !== target.scheme) || (rule.port !== null && rule.port !== target.port))
    return false;
  if (rule.methods !== null && !rule.methods.includes(target.method)) return false;
  if (!pathMatches(rule.pathPrefix, target.path)) return false;
  const host = rule.host;
  switch (host.kind) {
    case "name":
      return target.name === host.name;
    case "wildcard":
      return target.name !== null && (host.suffix === "" || target.name.endsWith(`.${host.suffix}`));
    case "ip":
    case "cidr":
      return true; // judged against the address
  }
}

/**
 * Does an allow `rule` name this address (an IP or CIDR rule)? An address that
 * carries an IPv4 is named by a rule naming the IPv4 it was classified by.
 */
export function namesAddress(rule: EgressRule, address: string): boolean {
  const host = rule.host;
  return (host.kind === "ip" || host.kind === "cidr") && rangeMatches(host.range, address, "decisive");
}

/** Does a deny `rule` (an IP or CIDR rule) cover this address, or any IPv4 it carries? */
export function deniesAddress(rule: EgressRule, address: string): boolean {
  const host = rule.host;
  return (host.kind === "ip" || host.kind === "cidr") && rangeMatches(host.range, address, "every");
}

/** For IP and CIDR rules the URL's host must be that address; for names, any answer judged later. */
export function allowsAddress(rule: EgressRule, target: Target, address: string): boolean {
  const host = rule.host;
  if (host.kind === "ip" || host.kind === "cidr") return target.name === null && namesAddress(rule, address);
  return target.name !== null;
}
