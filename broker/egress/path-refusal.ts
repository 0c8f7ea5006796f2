/**
 * What a path `unsafePath` refuses means to the rules around it:
 *
 * - for **allow** rules (`prefixRefusal`): when no approved rule matched, the
 *   prefix rule that would have matched but for the path is named, with the
 *   problem, in the audit rule and the message;
 * - for **operator deny** rules (`denyCoversUnsafePath`): such a path may be
 *   read by the server as any path of its host, the denied prefix included,
 *   so a prefix deny rule matching everything else denies it.
 */
import { unsafePath } from "./path-guard.js";
import { matchesUrl, type EgressRule, type Target } from "./rules.js";

/** A refusal in the judge's terms: the audit rule and the message. */
export interface PathRefusal {
  readonly rule: string;
  readonly reason: string;
}

/**
 * Called when no approved rule matched: if a prefix rule would have matched
 * but for an unsafe path, the refusal naming that rule and why; else null
 * (the plain `manifest:no-match`).
 */
export function prefixRefusal(rules: readonly EgressRule[], target: Target): PathRefusal | null {
  const unsafe = unsafePath(target.path);
  if (unsafe === null) return null;
  for (const rule of rules) {
    if (rule.pathPrefix === "") continue;
    // The judge's own pairing: address rules allow address URLs, name rules names.
    if ((rule.host.kind === "ip" || rule.host.kind === "cidr") !== (target.name === null)) continue;
    const under = target.path === rule.pathPrefix || target.path.startsWith(`${rule.pathPrefix}/`);
    if (!under || !matchesUrl(rule, { ...target, path: rule.pathPrefix })) continue;
    return {
      rule: `path:${unsafe.problem} ${rule.text}`,
      reason:
        `the path ${target.path} ${unsafe.why}; the rule '${rule.text}' allows ` +
        `only paths under its prefix that every server reads the same way`,
    };
  }
  return null;
}

/** Does a deny rule with a path prefix cover this unsafe path (its scheme, host, port and methods matching)? */
export function denyCoversUnsafePath(rule: EgressRule, target: Target): boolean {
  return (
    rule.pathPrefix !== "" && unsafePath(target.path) !== null && matchesUrl(rule, { ...target, path: rule.pathPrefix })
  );
}
