/**
 * The broker's cache of parsed egress rules. Its own module because the
 * capability environment (context.ts) holds one and the policy stage
 * (egress-policy.ts) reads the environment: neither need import the other.
 */
import { InvalidHostError } from "../egress/hostname.js";
import { parseRule, RuleError, type EgressRule } from "../egress/rules.js";

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
        } catch (err) {
          // Anything else (the suffix list failed to load) is this request's failure, not the rule's: not remembered.
          if (!(err instanceof RuleError || err instanceof InvalidHostError)) throw err;
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
