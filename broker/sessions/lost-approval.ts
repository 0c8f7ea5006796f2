/**
 * A session's call is planned against the approvals as its session last saw
 * them; one revoked (or its install changed) after that look and before the
 * extension's satellite is started for the call is the broker's refusal, and
 * a session answers it as an outcome — its calls never reject for that.
 */
import { BrokerCode, TetherError } from "../base/errors.js";
import { failure, type Failure } from "../base/outcome.js";

/**
 * What a session's call answers for `err`, thrown by the kernel under it: `not_approved` with the broker's
 * message when the approval was lost meanwhile; anything else is thrown on. (Caught where the call is awaited:
 * a wrapping promise would cost every call a turn.)
 */
export function lostApprovalOutcome(err: unknown): Failure {
  if (err instanceof TetherError && err.code === BrokerCode.notApproved) return failure(err.code, err.message);
  throw err;
}
