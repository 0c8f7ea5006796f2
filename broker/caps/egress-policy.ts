/**
 * The policy stage of `net.fetch`: the effective rule set, composed at dispatch
 * from the approval as it stands now, the operator's file and the session.
 */
import type { EgressPolicy } from "../egress/judge.js";
import type { CallScope } from "./context.js";
import type { OperatorPolicy } from "./policy.js";

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
