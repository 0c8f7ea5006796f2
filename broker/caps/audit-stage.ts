/** The audit stage: every decision, allowed or denied, is one row naming its rule. */
import type { CapReply } from "../satellite/process.js";
import type { CapCall, InvocationInfo } from "../satellite/slot.js";
import type { CallScope, CapContext, CapEnvironment } from "./context.js";

export function scopeFor(env: CapEnvironment, ctx: CapContext, call: CapCall, info: InvocationInfo): CallScope {
  const audit = (decision: "allowed" | "denied", rule: string, target = "", bytes = 0) =>
    env.ledger.audit({ invocationId: ctx.invocationId, sessionId: ctx.sessionId, extension: info.extension, capability: call.cap, target, decision, rule, bytes });
  return {
    env,
    ctx,
    info,
    call,
    audit,
    refuse: (code, rule, msg, target = ""): CapReply => {
      audit("denied", rule, target);
      return { ok: false, error: { code, msg: `${msg} (rule: ${rule})` } };
    },
  };
}
