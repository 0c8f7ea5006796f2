/**
 * The policy stage of `net.fetch`: the effective rule set, composed at dispatch
 * from the approval as it stands now, the operator's file and the session.
 */
import type { EgressPolicy } from "../egress/judge.js";
import { parseRule, type EgressRule } from "../egress/rules.js";
import type { CallScope } from "./context.js";
import type { OperatorPolicy } from "./policy.js";

/**
 * Parsed rules by their text, one per broker (its capability environment holds it):
 * a rule's meaning never changes, and parsing is not free (IDN, public suffixes).
 */
export class ParsedRules {
  readonly #byText = new Map<string, EgressRule | null>();

  of(texts: readonly string[]): EgressRule[] {
    // Approved rules were validated at install; one that no longer parses allows nothing.
    const out: EgressRule[] = [];
    for (const text of texts) {
      let rule = this.#byText.get(text);
      if (rule === undefined) {
        try {
          rule = parseRule(text);
        } catch {
          rule = null;
        }
        if (this.#byText.size > 10_000) this.#byText.clear();
        this.#byText.set(text, rule);
      }
      if (rule !== null) out.push(rule);
    }
    return out;
  }
}

/** Approval ∩ operator ∩ session, as they are at this call. */
export function composeEgressPolicy(scope: CallScope, operator: OperatorPolicy): EgressPolicy {
  const session = scope.ctx.session();
  return {
    extension: scope.info.extension,
    approved: scope.env.rules.of(scope.ctx.grants().net),
    operatorDeny: operator.deny,
    reach: operator.reach,
    offline: session.offline === true,
    sessionAllow: session.allow === undefined ? null : scope.env.rules.of(session.allow),
  };
}
