/**
 * The manifest's layer of the egress judge (judge.ts): the URL as the rules
 * see it (`targetOf`), the approved rule that allows it (`approvedRule`) and,
 * for a URL written with an IP, whether an approved rule names that address
 * (`literalRefusal`). Pure, and free of the broker's own state: the SDK's test
 * kit judges its fake `net.fetch` with these very functions
 * (jail-runtime/ext/testing/egress.ts), so an extension's tests and the
 * broker cannot disagree about what a manifest allows.
 */
import { normaliseHost } from "./hostname.js";
import { parseIpLiteral } from "./ip-literal.js";
import { prefixRefusal } from "./path-refusal.js";
import { allowsAddress, matchesUrl, type EgressRule, type Target } from "./rules.js";

/** A refusal in the judge's terms: the audit rule and the message. */
export interface LayerRefusal {
  readonly rule: string;
  readonly reason: string;
}

const DEFAULT_PORT = { "http:": 80, "https:": 443 } as const;

/** Parses a URL once and derives the judged target; the same URL object is what gets sent. */
export function targetOf(url: URL, method: string): Target | { error: string } {
  if (url.protocol !== "http:" && url.protocol !== "https:")
    return { error: `scheme '${url.protocol.replace(/:$/, "")}' is not allowed` };
  if (url.username !== "" || url.password !== "") return { error: "credentials in the URL (userinfo) are not allowed" };
  const ip = parseIpLiteral(url.hostname);
  let name: string | null = null;
  if (ip === null) {
    try {
      name = normaliseHost(url.hostname);
    } catch (err) {
      return { error: `bad host: ${(err as Error).message}` };
    }
  }
  const port = url.port === "" ? DEFAULT_PORT[url.protocol] : Number(url.port);
  return {
    method: method.toUpperCase(),
    scheme: url.protocol === "http:" ? "http" : "https",
    name,
    port,
    path: url.pathname,
  };
}

export const where = (url: URL) => `${url.protocol}//${url.host}${url.pathname}`;

/**
 * An IP/CIDR rule allows only URLs written with an address; a name rule only
 * names. (IP rules still *name* the addresses a name may resolve to.)
 */
export const sameKind = (rule: EgressRule, target: Target) =>
  (rule.host.kind === "ip" || rule.host.kind === "cidr") === (target.name === null);

/** The first approved rule that allows the target by its URL, or the refusal (`manifest:no-match`, `path:…`). */
export function approvedRule(
  approved: readonly EgressRule[],
  target: Target,
  url: URL,
  extension: string,
): { readonly rule: EgressRule } | { readonly refused: LayerRefusal } {
  const rule = approved.find((r) => sameKind(r, target) && matchesUrl(r, target));
  if (rule !== undefined) return { rule };
  const unsafe = prefixRefusal(approved, target); // a prefix rule refused the path: say which and why
  if (unsafe !== null) return { refused: unsafe };
  return {
    refused: {
      rule: "manifest:no-match",
      reason: `no approved rule of '${extension}' allows ${target.method} ${where(url)}`,
    },
  };
}

/** For a URL written with an IP: the refusal when no approved rule names `address` (canonical), else null. */
export function literalRefusal(
  approved: readonly EgressRule[],
  target: Target,
  address: string,
  extension: string,
): LayerRefusal | null {
  if (approved.some((rule) => matchesUrl(rule, target) && allowsAddress(rule, target, address))) return null;
  return { rule: "manifest:no-match", reason: `no approved rule of '${extension}' names the address ${address}` };
}
