/** `net.fetch`: policy (composed at dispatch) → hooks → perform with undici, every hop audited. */
import * as v from "valibot";
import { brokeredFetch } from "../egress/fetch.js";
import { WireCode } from "../errors.js";
import type { CapReply } from "../satellite/process.js";
import type { CallScope } from "./context.js";
import { composeEgressPolicy } from "./egress-policy.js";
import { askHooks } from "./hook-stage.js";

export const NetFetchArgs = v.object({
  url: v.pipe(v.string(), v.maxLength(8192)),
  method: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z]{1,16}$/)), "GET"),
  headers: v.optional(v.pipe(v.array(v.tuple([v.pipe(v.string(), v.maxLength(256)), v.pipe(v.string(), v.maxLength(8192))])), v.maxLength(100)), []),
  body: v.optional(v.nullable(v.pipe(v.string(), v.base64())), null),
});

export async function netFetchHandler(scope: CallScope, args: v.InferOutput<typeof NetFetchArgs>): Promise<CapReply> {
  const { env, ctx } = scope;
  const operator = env.operator.current();
  if (operator instanceof Error) {
    return scope.refuse(WireCode.denied, "operator:policy-invalid", `The operator policy cannot be read, so all egress is refused: ${operator.message}`, args.url);
  }
  const policy = composeEgressPolicy(scope, operator);
  const blocked = await askHooks(scope, args.url);
  if (blocked) return blocked;
  const outcome = await brokeredFetch(
    { url: args.url, method: args.method, headers: args.headers, body: args.body === null ? null : Buffer.from(args.body, "base64") },
    policy,
    env.resolve,
    { maxBodyBytes: operator.maxBodyBytes, maxRedirects: operator.maxRedirects, deadlineAt: ctx.deadlineAt },
    {
      // One audit row per hop: refused hops when judged, redirecting hops when answered,
      // the final hop with its bytes below.
      judged: (url, verdict) => {
        if (!verdict.allowed) scope.audit("denied", verdict.rule, url);
      },
      redirected: (url, verdict) => scope.audit("allowed", verdict.rule, url),
      // The hook stage is asked about every hop, not only the first.
      gate: async (url) => {
        const refused = await askHooks(scope, url);
        if (refused === null || refused.ok) return null;
        const rule = /\(rule: ([^)]*)\)$/.exec(refused.error.msg)?.[1] ?? "hook";
        return { rule, reason: refused.error.msg.replace(/ \(rule: [^)]*\)$/, "") };
      },
    },
  );
  if (outcome.ok) {
    scope.audit("allowed", outcome.verdict.rule, outcome.response.url, outcome.response.body.length);
    const r = outcome.response;
    return { ok: true, value: { status: r.status, headers: r.headers, body: r.body, url: r.url } };
  }
  if (outcome.verdict !== undefined) {
    return { ok: false, error: { code: WireCode.denied, msg: `net.fetch refused: ${outcome.verdict.reason} (rule: ${outcome.verdict.rule})` } };
  }
  if (outcome.rule.startsWith("limit:") || outcome.rule === "url") return scope.refuse(WireCode.denied, outcome.rule, `net.fetch refused: ${outcome.failure}`, args.url);
  // Allowed by policy, but the target could not be reached.
  scope.audit("allowed", outcome.rule, args.url);
  return { ok: false, error: { code: WireCode.unreachable, msg: `net.fetch failed: ${outcome.failure}` } };
}
