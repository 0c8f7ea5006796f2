/**
 * What an allow rule can really reach under the operator's policy, for the
 * review: a rule naming loopback, private or other non-public addresses passes
 * the install and can be approved, yet every call to it is refused
 * (`operator:no-private`, `operator:no-metadata`) until the operator switches
 * the class on in policy.toml. The review says so, with the switch, before
 * anyone approves it. A name rule for `localhost` is flagged too: a name rule
 * never reaches a non-public address (only a rule naming the address does).
 */
import { rangeClasses, rangeMatches } from "./address-range.js";
import type { Reach } from "./reach.js";
import { parseRule, RuleError } from "./rules.js";

export interface ReachWarning {
  /** The rule as written. */
  readonly rule: string;
  /** The address class left unreachable (`loopback`, `private`, `metadata`, …). */
  readonly class: string;
  /** What every call to it is refused as, in the audit. */
  readonly refusal: string;
  /** What to change, and where. */
  readonly fix: string;
}

const human = (cls: string) => cls.replace(/_/g, "-");

/** The warnings for `rules` under `reach` (from `policyFile`). */
export function reachWarnings(rules: readonly string[], reach: Reach, policyFile: string): ReachWarning[] {
  const out: ReachWarning[] = [];
  for (const text of rules) {
    let rule;
    try {
      rule = parseRule(text);
    } catch (err) {
      if (err instanceof RuleError) continue; // described as refused already
      throw err;
    }
    const h = rule.host;
    if (h.kind === "name" && (h.name === "localhost" || h.name.endsWith(".localhost"))) {
      out.push({
        rule: text,
        class: "loopback",
        refusal: "address:loopback",
        fix:
          `${h.name} is this machine (loopback), which a name rule never reaches: ` +
          `the author must name the address (http://127.0.0.1:${rule.port}${rule.pathPrefix}), ` +
          `and you add "loopback" to [net] reach in ${policyFile}`,
      });
      continue;
    }
    if (h.kind !== "ip" && h.kind !== "cidr") continue;
    for (const cls of rangeClasses(h.range)) {
      if (cls === "public" || cls === "host_interface") continue;
      if (cls === "unspecified") {
        out.push({
          rule: text,
          class: cls,
          refusal: "address:unspecified",
          fix: "an unspecified address dials this host itself and is never reachable: the rule allows nothing there",
        });
      } else if (cls === "metadata") {
        const listed = h.kind === "ip" && reach.metadata.some((m) => rangeMatches(m, h.address, "decisive"));
        if (!listed) {
          out.push({
            rule: text,
            class: cls,
            refusal: "operator:no-metadata",
            fix:
              `cloud metadata addresses are reachable only one by ` +
              `one: add the address to [net] metadata in ${policyFile}`,
          });
        }
      } else if (!(reach.classes as ReadonlySet<string>).has(cls)) {
        out.push({
          rule: text,
          class: cls,
          refusal: "operator:no-private",
          fix: `add "${cls}" to [net] reach in ${policyFile} to let approved rules reach ${human(cls)} addresses`,
        });
      }
    }
  }
  return out;
}
