/**
 * `model.complete`: a completion an extension asks from inside one of its
 * invocations, through the completion bridge (broker/providers/model-call.ts,
 * behind the port in broker/base/model-port.ts).
 *
 *   judge    the approval's `[model]` (declared and approved), the call's
 *            `max_tokens` against `max_tokens_per_call`, the provider against
 *            `providers`, the day's budget, the session's run state
 *            (exclusive work), then the provider it goes to
 *   hooks    the `cap_call` hooks see `model.complete` with the target
 *            `<provider>/<model>`
 *   perform  the session's lease is taken (checked again), the day's tokens
 *            reserved, the completion asked; each delta is a partial of the
 *            invocation; the reply is the whole text, its usage and the deltas
 *   audit    one row: target `<provider>/<model>`, `bytes` the tokens it used
 *
 * A refusal names its rule and what to change. A provider's failure is
 * `unreachable` (the call was allowed; its target failed), with the
 * provider's words, never a stack or a secret.
 */
import {
  BYTES_PER_TOKEN_FLOOR,
  boundedDeltas,
  chargedUsage,
  cutToBytes,
  inputFloor as inputFloorOf,
  type ModelCompleteArgs,
  receivedBytes,
  utf8Length,
} from "../../jail-runtime/wire/model-args.js";
import { MAX_COMPLETION_REQUEST_BYTES } from "../../jail-runtime/wire/provider-kinds.js";
import { WireCode } from "../base/errors.js";
import type { ModelAsk, ModelBusy, ModelPort, SessionModels } from "../base/model-port.js";
import type { CallScope } from "./context.js";
import { modelBudget } from "./model-budget.js";
import { refusal, type Act, type Performed, type Refusal } from "./pipeline.js";

/** The longest provider message passed on to the extension. */
const MAX_FAILURE_TEXT = 2048;

interface Judged {
  readonly port: ModelPort;
  readonly ask: ModelAsk;
  readonly provider: string;
  readonly target: string;
  readonly perDay: number;
  readonly session: SessionModels | null;
  /** What the request's text bears at least (the floor above), charged whatever the provider reports. */
  readonly inputFloor: number;
}

function dayRefusal(scope: CallScope, maxTokens: number, inputFloor: number, perDay: number, left: number): Refusal {
  return refusal(
    WireCode.denied,
    "model.max_tokens_per_day",
    `model.complete may use up to ${maxTokens + inputFloor} tokens (max_tokens ${maxTokens} and at least ` +
      `${inputFloor} of input), and '${scope.info.extension}' has ${Math.max(0, left)} of its ${perDay} tokens ` +
      `a day left (UTC; calls in flight hold theirs): ask for fewer max_tokens or send less, wait for the next ` +
      `day, or raise [model] max_tokens_per_day and approve again`,
  );
}

const busyRefusal = (busy: ModelBusy, target = ""): Refusal =>
  refusal(WireCode.busySession, busy.rule, busy.msg, target);

export function modelCompleteAct(scope: CallScope, args: ModelCompleteArgs): Act<Judged> {
  const extension = scope.info.extension;
  const request = args.request;
  return {
    judge: () => {
      const grant = scope.ctx.grants().model;
      if (grant === undefined)
        return refusal(
          WireCode.denied,
          "model",
          `model.complete: '${extension}' has no approved [model]; declare [model] (max_tokens_per_call, ` +
            `max_tokens_per_day, providers?) in its manifest, then tether review ${extension} and tether approve ` +
            `${extension}`,
        );
      const port = scope.env.models;
      if (port === undefined) return refusal(WireCode.denied, "model", "model.complete: this broker serves no models");
      const bytes = Buffer.byteLength(JSON.stringify(request));
      if (bytes > MAX_COMPLETION_REQUEST_BYTES)
        return refusal(
          WireCode.badArguments,
          "args",
          `model.complete: the request is ${bytes} bytes as JSON; at most ${MAX_COMPLETION_REQUEST_BYTES}`,
        );
      if (request.max_tokens > grant.max_tokens_per_call)
        return refusal(
          WireCode.denied,
          "model.max_tokens_per_call",
          `model.complete asks for max_tokens ${request.max_tokens}; the approval allows at most ` +
            `${grant.max_tokens_per_call} a call: ask for fewer, or raise [model] max_tokens_per_call and ` +
            "approve again",
        );
      if (request.provider !== undefined && grant.providers !== null && !grant.providers.includes(request.provider))
        return refusal(
          WireCode.denied,
          "model.providers",
          `model.complete asks provider '${request.provider}'; the approval allows only ` +
            `${grant.providers.join(", ")}: name one of them, or add it to [model] providers and approve again`,
        );
      const inputFloor = inputFloorOf(request);
      const left = modelBudget(scope.env.store).left(extension, grant.max_tokens_per_day);
      if (request.max_tokens + inputFloor > left)
        return dayRefusal(scope, request.max_tokens, inputFloor, grant.max_tokens_per_day, left);
      const session = port.session(scope.ctx.sessionId);
      const busy = session?.admit(extension);
      if (busy !== undefined && !busy.ok) return busyRefusal(busy);
      // Only a look: the lease is taken when the call is made (the hooks may still block it).
      if (busy?.ok) busy.release();
      const ask: ModelAsk = {
        sessionId: scope.ctx.sessionId,
        extension,
        request,
        allow: grant.providers,
        chain: scope.ctx.chain,
      };
      const choice = port.choose(ask);
      if (!choice.ok) return refusal(choice.code, choice.rule, `model.complete: ${choice.msg}`);
      const target = `${choice.provider}/${choice.model}`;
      return { port, ask, provider: choice.provider, target, perDay: grant.max_tokens_per_day, session, inputFloor };
    },
    shown: (judged) => ({ target: judged.target }),
    perform: async (judged): Promise<Performed> => {
      const { target, inputFloor } = judged;
      const held = request.max_tokens + inputFloor;
      // The reply's text (and the deltas passed on) stop at what max_tokens can bear.
      const maxTextBytes = request.max_tokens * BYTES_PER_TOKEN_FLOOR;
      const denied = (r: Refusal): Performed => ({
        reply: { ok: false, error: { code: r.refused.code, msg: `${r.refused.msg} (rule: ${r.refused.rule})` } },
        decision: "denied",
        rule: r.refused.rule,
        target,
      });
      // Taken now: another call may have come between the judge and here.
      const lease = judged.session?.admit(extension) ?? null;
      if (lease !== null && !lease.ok) return denied(busyRefusal(lease, target));
      const budget = modelBudget(scope.env.store);
      const left = budget.left(extension, judged.perDay);
      if (held > left) {
        lease?.release();
        return denied(dayRefusal(scope, request.max_tokens, inputFloor, judged.perDay, left));
      }
      const spent = budget.reserve(extension, held);
      const deltas: string[] = [];
      let deltaBytes = 0;
      const signal = lease === null ? scope.ctx.signal : AbortSignal.any([scope.ctx.signal, lease.signal]);
      let outcome;
      try {
        outcome = await judged.port.complete(judged.ask, judged.provider, {
          signal,
          onDelta: (text) => {
            const room = maxTextBytes - deltaBytes;
            if (room <= 0) return;
            const kept = cutToBytes(text, room);
            deltaBytes += utf8Length(kept);
            deltas.push(kept);
            // The invocation's caller sees the deltas as they come (the satellite gets them in the reply).
            scope.info.report(kept);
          },
        });
      } finally {
        lease?.release();
      }
      if (!outcome.ok) {
        // Cancelled (the invocation ended or the session closes): what the provider had used is unknown,
        // so all it held is charged. Failed otherwise: the input it was sent.
        const cancelled = signal.aborted;
        const charged = cancelled ? held : inputFloor;
        spent(charged);
        if (lease?.signal.aborted === true)
          return {
            ...denied(
              refusal(
                WireCode.busySession,
                "session.closing",
                `model.complete was cancelled: session '${scope.ctx.sessionId}' is closing`,
              ),
            ),
            bytes: charged,
          };
        const msg = `model.complete: ${outcome.msg}`.slice(0, MAX_FAILURE_TEXT);
        return {
          reply: { ok: false, error: { code: WireCode.unreachable, msg: `${msg} (${outcome.code})` } },
          decision: "allowed",
          rule: "model",
          target,
          bytes: charged,
        };
      }
      const text = cutToBytes(outcome.text, maxTextBytes);
      const cut = text.length < outcome.text.length;
      // Charged: what the provider reports, never less than what the request and the kept text bear.
      const usage = chargedUsage(outcome.usage, request, receivedBytes(text, deltas));
      const used = usage.input_tokens + usage.output_tokens;
      spent(used);
      judged.session?.used(extension, { ...outcome, usage }, scope.ctx.chain);
      return {
        reply: {
          ok: true,
          value: {
            text,
            usage,
            stop_reason: cut ? "max_tokens" : outcome.stopReason,
            model: outcome.model,
            provider: outcome.provider,
            deltas: boundedDeltas(deltas),
          },
        },
        decision: "allowed",
        rule: "model",
        target,
        bytes: used,
      };
    },
  };
}
