/**
 * `act.before` and `act.after`: an extension reports an act of its own (an
 * `[[act]]` of its manifest) to the session's hooks — before it runs, the
 * `tool_call` hooks (which may block it or rewrite its arguments); after, the
 * `tool_result` hooks (which may withhold its output). Judged per call like
 * every capability — the approval must grant the act, a hook may not report
 * one, an invocation has at most MAX_OPEN_ACTS begun and MAX_ACTS_PER_INVOCATION
 * reported, the daemon scope and a closing session report none (no hook could
 * guard them) — and audited, one row
 * per call, the act's name as the target. The session's side (who is asked,
 * the composition, the trace) is broker/sessions/reported-acts.ts, reached
 * through the port in broker/base/act-port.ts; `cap_call` hooks are not asked
 * (the act is shown to the tool hooks instead).
 */
import { randomUUID } from "node:crypto";
import * as v from "valibot";
import {
  ACT_AFTER_USAGE,
  ACT_BEFORE_USAGE,
  ActAfterArgs,
  ActBeforeArgs,
  jsonBytes,
  MAX_ACT_ARGUMENTS,
  MAX_ACT_RESULT,
  MAX_ACTS_PER_INVOCATION,
  MAX_OPEN_ACTS,
} from "../../jail-runtime/wire/act-args.js";
import type { CapReply } from "../base/capability.js";
import type { ActReporter, SessionActs } from "../base/act-port.js";
import { WireCode } from "../base/errors.js";
import type { CallScope } from "./context.js";
import { refusal, runAct, type Act, type Performed } from "./pipeline.js";

/** One act this invocation began and has not ended. */
interface Begun {
  readonly act: string;
  readonly arguments: unknown;
  readonly startedMs: number;
}

type Runner = (scope: CallScope, raw: unknown) => Promise<CapReply>;

const json = (value: unknown): CapReply => ({ ok: true, value: { json: JSON.stringify(value) } });

function reporter(scope: CallScope): ActReporter {
  return {
    sessionId: scope.ctx.sessionId,
    extension: scope.info.extension,
    invocationId: scope.ctx.invocationId,
    kind: scope.info.kind,
    name: scope.info.name,
    chain: scope.ctx.chain,
  };
}

/** Judged now: the act is granted, not reported from a hook; then the session whose hooks are asked (or none). */
function judgeAct(scope: CallScope, name: string): { acts: SessionActs | null } | ReturnType<typeof refusal> {
  const { ctx, info, env } = scope;
  if (!(ctx.grants().acts ?? []).includes(name))
    return refusal(
      WireCode.denied,
      "act",
      `${scope.call.cap}: '${info.extension}' does not declare the act '${name}'; add [[act]] name = "${name}" ` +
        `(with a description) to its manifest, install it again and have the operator approve it`,
      name,
    );
  if (info.kind === "event")
    return refusal(
      WireCode.denied,
      "act:in_hook",
      `${scope.call.cap}: a hook may not report acts (the hooks it would ask wait on it); report the act from ` +
        `the tool or command that runs it`,
      name,
    );
  const acts = env.acts?.(ctx.sessionId) ?? null;
  // Where hooks would guard it but none can be asked, the act is refused: never run unasked.
  if (acts !== null && "unguarded" in acts)
    return refusal(
      WireCode.denied,
      "act:unguarded",
      `${scope.call.cap}: '${name}' cannot be reported here — ${acts.unguarded}, so no hook could guard it; ` +
        "report it from a tool, command or route of an open session",
      name,
    );
  return { acts };
}

/** What one invocation's acts have reported so far: those begun and not ended, and how many in all. */
interface InvocationActs {
  readonly begun: Map<string, Begun>;
  reported: number;
}

function beforeAct(scope: CallScope, args: v.InferOutput<typeof ActBeforeArgs>, mine: InvocationActs) {
  const { begun } = mine;
  const act: Act<{ acts: SessionActs | null }> = {
    judge: () => {
      const judged = judgeAct(scope, args.name);
      if ("refused" in judged) return judged;
      if (jsonBytes(args.arguments) > MAX_ACT_ARGUMENTS)
        return refusal(
          WireCode.badArguments,
          "args",
          `act.before: the arguments of '${args.name}' are more than ${MAX_ACT_ARGUMENTS} bytes of JSON`,
          args.name,
        );
      if (mine.reported >= MAX_ACTS_PER_INVOCATION)
        return refusal(
          WireCode.denied,
          "act:count",
          `act.before: this invocation already reported ${MAX_ACTS_PER_INVOCATION} acts, the most one may; ` +
            "report fewer (one act for a batch), or from separate calls",
          args.name,
        );
      if (begun.size >= MAX_OPEN_ACTS)
        return refusal(
          WireCode.denied,
          "act:open",
          `act.before: this invocation has ${MAX_OPEN_ACTS} acts begun and not ended; end one (handle.after or ` +
            `handle.failed) first`,
          args.name,
        );
      return judged;
    },
    shown: () => null,
    perform: async ({ acts }): Promise<Performed> => {
      mine.reported++;
      const callId = randomUUID();
      const startedMs = Date.now();
      if (acts === null) {
        // No session ever held this scope (the hookless library path): nobody to ask, it goes ahead as reported.
        begun.set(callId, { act: args.name, arguments: args.arguments, startedMs });
        return {
          reply: json({ call_id: callId, arguments: args.arguments, rewritten_by: null }),
          decision: "allowed",
          rule: "act:no_session",
          target: args.name,
        };
      }
      const answer = await acts.before({
        ...reporter(scope),
        callId,
        act: args.name,
        arguments: args.arguments,
      });
      if (answer.verdict === "blocked")
        return {
          reply: json({ call_id: callId, blocked: { reason: answer.reason, by: answer.by } }),
          decision: "denied",
          rule: `hook:${answer.by}`,
          target: args.name,
        };
      if (answer.verdict === "unfit")
        return {
          reply: {
            ok: false,
            error: {
              code: WireCode.badArguments,
              msg:
                `act.before: the arguments of '${args.name}' do not fit its [[act]] parameters: ${answer.problem} ` +
                `(rule: act.parameters)`,
            },
          },
          decision: "denied",
          rule: "act.parameters",
          target: args.name,
        };
      begun.set(callId, { act: args.name, arguments: answer.arguments, startedMs });
      return {
        reply: json({ call_id: callId, arguments: answer.arguments, rewritten_by: answer.rewrittenBy }),
        decision: "allowed",
        rule: "act",
        target: args.name,
      };
    },
  };
  return act;
}

function afterAct(scope: CallScope, args: v.InferOutput<typeof ActAfterArgs>, begun: Map<string, Begun>) {
  const act: Act<{ acts: SessionActs | null; begun: Begun }> = {
    judge: () => {
      const found = begun.get(args.call_id);
      if (found === undefined)
        return refusal(
          WireCode.badArguments,
          "act:unknown_call",
          `act.after: this invocation began no act '${args.call_id.slice(0, 128)}', or it was already ended`,
        );
      // Ended whatever comes next: a second after of the same act is refused above.
      begun.delete(args.call_id);
      const judged = judgeAct(scope, found.act);
      if ("refused" in judged) return judged;
      if (jsonBytes(args.result) > MAX_ACT_RESULT)
        return refusal(
          WireCode.badArguments,
          "args",
          `act.after: the output of '${found.act}' is more than ${MAX_ACT_RESULT} bytes of JSON; the hooks ` +
            `cannot be told it, so it is not handed back`,
          found.act,
        );
      return { ...judged, begun: found };
    },
    shown: () => null,
    perform: async ({ acts, begun: found }): Promise<Performed> => {
      if (acts === null)
        return { reply: json({ withheld: null }), decision: "allowed", rule: "act:no_session", target: found.act };
      const answer = await acts.after({
        ...reporter(scope),
        callId: args.call_id,
        act: found.act,
        arguments: found.arguments,
        ok: args.ok,
        result: args.result,
        startedMs: found.startedMs,
        finishedMs: Date.now(),
      });
      return {
        reply: json({ withheld: answer.withheld }),
        decision: answer.withheld === null ? "allowed" : "denied",
        rule: answer.withheld === null ? "act" : `hook:${answer.withheld.by}`,
        target: found.act,
      };
    },
  };
  return act;
}

/** The two capabilities, for one invocation's dispatcher (the acts it began are its own). */
export function actCapabilities(): Record<string, Runner> {
  const mine: InvocationActs = { begun: new Map<string, Begun>(), reported: 0 };
  return {
    "act.before": async (scope, raw) => {
      const args = v.safeParse(ActBeforeArgs, raw);
      if (!args.success) return scope.refuse(WireCode.badArguments, "args", ACT_BEFORE_USAGE);
      return (await runAct(scope, beforeAct(scope, args.output, mine))).reply;
    },
    "act.after": async (scope, raw) => {
      const args = v.safeParse(ActAfterArgs, raw);
      if (!args.success) return scope.refuse(WireCode.badArguments, "args", ACT_AFTER_USAGE);
      return (await runAct(scope, afterAct(scope, args.output, mine.begun))).reply;
    },
  };
}
