/**
 * A rule decoded for the operator (`tether review`): what it really allows,
 * whatever spelling the author chose — the canonical URL (A-label names,
 * explicit port, canonical address), and for an address rule the range's size
 * and the address classes it touches, with what the operator's policy must
 * switch on before they are reachable.
 */
import { describeCarried, isSingleAddress, rangeClasses, rangeHost, rangeSize } from "./address-range.js";
import { parseRule, RuleError, type EgressRule } from "./rules.js";

export interface RuleDescription {
  /** The rule as written. */
  readonly rule: string;
  /** `[METHODS ]scheme://host:port[/prefix]` in canonical form; null when the rule is refused. */
  readonly canonical: string | null;
  /** One line in plain words. */
  readonly summary: string;
  /** For address rules: the number of addresses and the classes touched. */
  readonly addresses?: { readonly count: string; readonly classes: readonly string[] };
}

function canonicalUrl(rule: EgressRule): string {
  const h = rule.host;
  const host = h.kind === "name" ? h.name : h.kind === "wildcard" ? `*.${h.suffix}` : rangeHost(h.range);
  const methods = rule.methods === null ? "" : `${rule.methods.join(",")} `;
  return `${methods}${rule.scheme}://${host}:${rule.port}${rule.pathPrefix}`;
}

const NEEDS: Record<string, string> = {
  metadata: "only if the operator lists the address in [net] metadata",
  unspecified: "never",
};

/** Decodes one allow rule; a rule that no longer parses is described as allowing nothing. */
export function describeRule(text: string): RuleDescription {
  let rule: EgressRule;
  try {
    rule = parseRule(text);
  } catch (err) {
    if (!(err instanceof RuleError)) throw err;
    return { rule: text, canonical: null, summary: `REFUSED, allows nothing: ${err.message}` };
  }
  const canonical = canonicalUrl(rule);
  const methods = rule.methods === null ? "any method" : rule.methods.join(", ");
  const path = rule.pathPrefix === "" ? "any path" : `paths under ${rule.pathPrefix}`;
  const h = rule.host;
  if (h.kind === "name")
    return { rule: text, canonical, summary: `the host ${h.name}, port ${rule.port}, ${path}, ${methods}` };
  if (h.kind === "wildcard")
    return {
      rule: text,
      canonical,
      summary: `any name under ${h.suffix} (not ${h.suffix} itself), port ${rule.port}, ${path}, ${methods}`,
    };
  const size = rangeSize(h.range);
  const classes = rangeClasses(h.range);
  const carried = describeCarried(h.range);
  const what = isSingleAddress(h.range)
    ? "1 address"
    : `${size.count} addresses (/${size.prefix} of IPv${size.family})`;
  const via = carried.length > 0 ? `, carrying ${carried.join(", ")}` : "";
  const reach = classes
    .filter((cls) => cls !== "public")
    .map(
      (cls) =>
        `${cls.replace(/_/g, "-")}: reachable ${NEEDS[cls] ?? `only if the operator's [net] reach has "${cls}"`}`,
    );
  const summary =
    `${what}${via}; ` +
    `classes: ${classes.map((c) => c.replace(/_/g, "-")).join(", ")}` +
    `${reach.length > 0 ? ` (${reach.join("; ")})` : ""}; ` +
    `port ${rule.port}, ${path}, ${methods}`;
  return { rule: text, canonical, summary, addresses: { count: size.count, classes } };
}
