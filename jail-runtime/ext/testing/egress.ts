/**
 * The kit's egress judge: a `net.fetch` is judged against the extension's
 * approved `[net] allow` rules by the broker's own matcher — the modules its
 * judge runs (broker/egress/manifest-layer.ts, rules.ts), not a copy — so an
 * extension's tests and the broker cannot disagree about what a rule allows.
 * Only the manifest's layer: the operator's policy, the session's, DNS and
 * address classes are the broker's and a route may script their refusals.
 */
import { parseIpLiteral } from "../../../broker/egress/ip-literal.js";
import { approvedRule, literalRefusal, targetOf } from "../../../broker/egress/manifest-layer.js";
import { parseRule, type EgressRule } from "../../../broker/egress/rules.js";

/** The broker's verdict on one request, as far as the manifest decides it. */
export type EgressVerdict =
  | { readonly allowed: true; readonly rule: string }
  | { readonly allowed: false; readonly rule: string; readonly reason: string };

/** The URL's own problems (scheme, userinfo, host), as the broker's judge words them; null when it has none. */
export function urlRefusal(url: URL, method: string): { readonly rule: "url"; readonly reason: string } | null {
  const target = targetOf(url, method);
  return "error" in target ? { rule: "url", reason: `${target.error} (${url.protocol}//${url.host})` } : null;
}

/** An extension's approved rules, parsed as the broker parses them at install. */
export class ApprovedRules {
  readonly rules: readonly EgressRule[];

  /** `texts` are `[net] allow` rules; `source` says where they came from, for the error a bad one throws. */
  constructor(
    readonly texts: readonly string[],
    source = "[net] allow",
  ) {
    this.rules = texts.map((text) => {
      try {
        return parseRule(text);
      } catch (err) {
        throw new Error(`${source}: ${(err as Error).message} (the broker refuses to install it)`);
      }
    });
  }

  /** Judges `method url` as the broker's judge does up to the manifest's layer. */
  judge(url: URL, method: string, extension: string): EgressVerdict {
    const target = targetOf(url, method);
    if ("error" in target) return { allowed: false, ...urlRefusal(url, method)! };
    const found = approvedRule(this.rules, target, url, extension);
    if ("refused" in found) return { allowed: false, ...found.refused };
    const literal = target.name === null ? parseIpLiteral(url.hostname) : null;
    const unnamed = literal === null ? null : literalRefusal(this.rules, target, literal, extension);
    if (unnamed !== null) return { allowed: false, ...unnamed };
    return { allowed: true, rule: found.rule.text };
  }
}
