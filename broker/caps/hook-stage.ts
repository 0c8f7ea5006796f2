/** The hook stage: the `cap_call` event, asked before a capability is performed. */
import { WireCode } from "../errors.js";
import type { CapReply } from "../satellite/process.js";
import type { CallScope } from "./context.js";

/** Asks the hooks about `target`; a block is audited and returned as the refusal. */
export async function askHooks(scope: CallScope, target: string): Promise<CapReply | null> {
  const { env, info, call, ctx } = scope;
  const verdict = await env.hooks({ sessionId: ctx.sessionId, invocationId: ctx.invocationId, extension: info.extension, capability: call.cap, target, within: `${info.kind}:${info.name}`, args: call.args });
  return verdict === null ? null : scope.refuse(WireCode.denied, `hook:${verdict.by}`, `Blocked by a hook: ${verdict.block}`, target);
}
