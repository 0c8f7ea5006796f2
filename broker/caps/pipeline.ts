/**
 * The capability pipeline: every act an extension asks for runs the same
 * stages, in this order, here and nowhere else —
 *
 *   arguments  bounded before decoding, then the capability's schema (dispatcher.ts)
 *   → judge    against the policy as it stands now: approval, operator, session, quota, rate
 *   → hooks    the `cap_call` hooks, shown the judged act (not the raw arguments)
 *   → perform  the handler, which only performs
 *   → audit    exactly one row per outcome, refusals and internal errors included
 *
 * A `net.fetch` is one act per hop: each redirect target is judged, hooked,
 * performed and audited as a new act, against the policy at that moment.
 */
import { WireCode } from "../base/errors.js";
import type { CapReply } from "../base/capability.js";
import type { CallScope, CapCallRequest } from "./context.js";
import { SessionFencedError } from "../store/kv-storage.js";

/** A refusal from the judge: audited as denied under `rule`. */
export interface Refusal {
  readonly refused: { readonly code: string; readonly rule: string; readonly msg: string; readonly target: string };
}

/** What a performed act answers and how its audit row reads. */
export interface Performed {
  readonly reply: CapReply;
  readonly decision: "allowed" | "denied";
  readonly rule: string;
  readonly target: string;
  readonly bytes?: number;
  /** The secret the request carried, by name (the audit row says so; never its value). */
  readonly secret?: string;
  /** The act led to another (a redirect): the capability goes on. */
  readonly next?: boolean;
}

/** What the `cap_call` hooks are shown of a judged act; null: not asked (partials, log lines). */
export interface Shown {
  readonly target: string;
  readonly request?: CapCallRequest;
}

export interface Act<J> {
  judge(): Promise<J | Refusal> | J | Refusal;
  shown(judged: J): Shown | null;
  perform(judged: J): Promise<Performed> | Performed;
}

export function refusal(code: string, rule: string, msg: string, target = ""): Refusal {
  return { refused: { code, rule, msg, target } };
}

function isRefusal(value: unknown): value is Refusal {
  return typeof value === "object" && value !== null && "refused" in value;
}

/** A failure inside the broker: logged in full for the operator, one audit row, and a reply without details. */
export function internalError(scope: CallScope, err: unknown, target = ""): CapReply {
  scope.env.log.error("capability failed inside the broker", {
    extension: scope.info.extension,
    capability: scope.call.cap,
    error: err instanceof Error ? (err.stack ?? err.message) : String(err),
  });
  return scope.refuse(
    WireCode.denied,
    "internal",
    `${scope.call.cap.slice(0, 64)} failed inside the broker; the operator's log has the details`,
    target,
  );
}

/** Runs one act through judge → hooks → perform → audit. */
export async function runAct<J>(scope: CallScope, act: Act<J>): Promise<{ reply: CapReply; next: boolean }> {
  let judged: J | Refusal;
  try {
    judged = await act.judge();
  } catch (err) {
    return { reply: internalError(scope, err), next: false };
  }
  if (isRefusal(judged)) {
    const r = judged.refused;
    return { reply: scope.refuse(r.code, r.rule, r.msg, r.target), next: false };
  }
  const shown = act.shown(judged);
  if (shown !== null) {
    const verdict = await scope.env.hooks({
      sessionId: scope.ctx.sessionId,
      invocationId: scope.ctx.invocationId,
      extension: scope.info.extension,
      capability: scope.call.cap,
      target: shown.target,
      within: `${scope.info.kind}:${scope.info.name}`,
      chain: scope.ctx.chain,
      ...(shown.request !== undefined ? { request: shown.request } : {}),
    });
    if (verdict !== null)
      return {
        reply: scope.refuse(WireCode.denied, `hook:${verdict.by}`, `Blocked by a hook: ${verdict.block}`, shown.target),
        next: false,
      };
  }
  let performed: Performed;
  try {
    performed = await act.perform(judged);
  } catch (err) {
    // A session's write fenced off (another host holds its lease now) is a refusal with its reason, not a fault.
    if (err instanceof SessionFencedError)
      return { reply: scope.refuse(WireCode.denied, "session_moved", err.message, shown?.target), next: false };
    return { reply: internalError(scope, err, shown?.target), next: false };
  }
  scope.audit(performed.decision, performed.rule, performed.target, performed.bytes ?? 0, performed.secret);
  return { reply: performed.reply, next: performed.next === true };
}
