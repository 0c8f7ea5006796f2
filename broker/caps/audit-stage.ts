/** The audit stage: every decision, allowed or denied, is one row naming its rule. */
import type { CapReply } from "../base/capability.js";
import type { CapCall, InvocationInfo } from "../base/capability.js";
import type { CallScope, CapContext, CapEnvironment } from "./context.js";
import type { Permits } from "./permits.js";
import type { RefusalAudit } from "./refusal-audit.js";

export function scopeFor(
  env: CapEnvironment,
  ctx: CapContext,
  call: CapCall,
  info: InvocationInfo,
  refusals: RefusalAudit | undefined,
  fetches: Permits,
): CallScope {
  const audit = (decision: "allowed" | "denied", rule: string, target = "", bytes = 0, secret?: string) => {
    const row = {
      invocationId: ctx.invocationId,
      sessionId: ctx.sessionId,
      extension: info.extension,
      capability: call.cap.slice(0, 256),
      target,
      decision,
      rule,
      bytes,
      ...(secret !== undefined ? { secret } : {}),
    };
    // Refusals cost the caller nothing: past an allowance they are counted, not written one by one.
    if (decision === "denied" && refusals !== undefined) refusals.record(row);
    else env.ledger.audit(row);
  };
  return {
    env,
    ctx,
    info,
    call,
    fetches,
    audit,
    refuse: (code, rule, msg, target = ""): CapReply => {
      audit("denied", rule, target);
      return { ok: false, error: { code, msg: `${msg} (rule: ${rule})` } };
    },
  };
}
