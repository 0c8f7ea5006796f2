/**
 * A session's call is planned against the approvals as its session last saw
 * them; one revoked (or its install changed) after that look and before the
 * extension's satellite is started for the call is the broker's refusal, and
 * a session answers it as an outcome — its calls never reject for that.
 */
import { BrokerCode, TetherError } from "../base/errors.js";
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";
import { failure, type InvocationOutcome } from "../base/outcome.js";

/** `pending`'s outcome, or `not_approved` with the broker's message when the approval was lost meanwhile. */
export async function answeringLostApproval<K extends AnyKind>(
  pending: Promise<InvocationOutcome<K>>,
): Promise<InvocationOutcome<K>> {
  try {
    return await pending;
  } catch (err) {
    if (err instanceof TetherError && err.code === BrokerCode.notApproved) return failure(err.code, err.message);
    throw err;
  }
}
