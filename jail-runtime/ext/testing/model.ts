/**
 * A scriptable `model.complete` for tests: it stands for the providers the
 * broker serves and the approval's `[model]` budget. Each call's request is
 * checked as the broker checks it (the shared schema, the per-call budget, the
 * provider allow-list, the day's budget), recorded in `requests`, and answered
 * by the script: a text (split into deltas by words), an answer of its own, a
 * refusal by a named rule (`busy_session` for `session.*` rules), or a
 * provider's failure (`unreachable`), worded as the broker's
 * (broker/caps/model-complete.ts).
 */
import * as v from "valibot";
import {
  BYTES_PER_TOKEN_FLOOR,
  boundedDeltas,
  chargedUsage,
  cutToBytes,
  inputFloor,
  MODEL_COMPLETE_USAGE,
  ModelCompleteArgs,
  receivedBytes,
  utf8Length,
} from "../../wire/model-args.js";
import type { CompletionRequest } from "../../wire/provider-kinds.js";
import { refused, type CapReply } from "./reply.js";

/** What the fake answers one request with. */
export type ModelAnswer =
  | string
  | {
      readonly text: string;
      readonly deltas?: readonly string[];
      readonly usage?: { readonly input_tokens: number; readonly output_tokens: number };
      readonly provider?: string;
    }
  | { readonly refuse: string; readonly reason?: string }
  | { readonly fail: string };

export interface FakeModelOptions {
  /** The answer to every request, or a function of the request; default `"fake completion"`. */
  readonly answer?: ModelAnswer | ((request: CompletionRequest) => ModelAnswer | Promise<ModelAnswer>);
  /** `[model] max_tokens_per_call`; default 4096. */
  readonly maxTokensPerCall?: number;
  /** `[model] max_tokens_per_day`; default 1,000,000. */
  readonly maxTokensPerDay?: number;
  /** `[model] providers`; default any. */
  readonly providers?: readonly string[];
  /** The provider named in replies when the request names none; default `"fake"`. */
  readonly provider?: string;
}

/** Words and the spaces after them: "a b" → ["a ", "b"]. */
const words = (text: string): string[] => text.match(/\S+\s*|\s+/g) ?? [];

/** The deltas passed on until `bytes` are, the last one cut (the broker's streaming cut). */
function keptDeltas(deltas: readonly string[], bytes: number): string[] {
  const kept: string[] = [];
  let room = bytes;
  for (const delta of deltas) {
    if (room <= 0) break;
    const cut = cutToBytes(delta, room);
    room -= utf8Length(cut);
    kept.push(cut);
  }
  return kept;
}

export class FakeModel {
  /** Every request that reached the fake (refused ones included), in order. */
  readonly requests: CompletionRequest[] = [];
  /** Tokens used so far (input + output of each answered call). */
  usedTokens = 0;
  readonly #options: FakeModelOptions;

  constructor(options: FakeModelOptions = {}) {
    this.#options = options;
  }

  async serve(args: unknown): Promise<CapReply> {
    const parsed = v.safeParse(ModelCompleteArgs, args);
    if (!parsed.success) return refused("bad_arguments", "args", MODEL_COMPLETE_USAGE);
    const request = parsed.output.request;
    this.requests.push(request);
    const o = this.#options;
    const perCall = o.maxTokensPerCall ?? 4096;
    const perDay = o.maxTokensPerDay ?? 1_000_000;
    if (request.max_tokens > perCall)
      return refused(
        "denied",
        "model.max_tokens_per_call",
        `model.complete asks for max_tokens ${request.max_tokens}; the approval allows at most ${perCall} a call: ` +
          `ask for fewer, or raise [model] max_tokens_per_call and approve again`,
      );
    if (request.provider !== undefined && o.providers !== undefined && !o.providers.includes(request.provider))
      return refused(
        "denied",
        "model.providers",
        `model.complete asks provider '${request.provider}'; the approval allows only ${o.providers.join(", ")}: ` +
          `name one of them, or add it to [model] providers and approve again`,
      );
    // A call holds its max_tokens and its input's floor, as the broker's budget does.
    const floor = inputFloor(request);
    if (request.max_tokens + floor > perDay - this.usedTokens)
      return refused(
        "denied",
        "model.max_tokens_per_day",
        `model.complete may use up to ${request.max_tokens + floor} tokens (max_tokens ${request.max_tokens} and ` +
          `at least ${floor} of input), and the extension has ${Math.max(0, perDay - this.usedTokens)} of its ` +
          `${perDay} tokens a day left`,
      );
    const scripted = o.answer ?? "fake completion";
    const answer = typeof scripted === "function" ? await scripted(request) : scripted;
    if (typeof answer === "object" && "refuse" in answer) {
      const code = answer.refuse.startsWith("session.") ? "busy_session" : "denied";
      return refused(code, answer.refuse, answer.reason ?? `model.complete was refused`);
    }
    if (typeof answer === "object" && "fail" in answer)
      return { ok: false, error: { code: "unreachable", msg: `model.complete: ${answer.fail} (refused)` } };
    // What max_tokens bears, as the broker cuts it (stop_reason "max_tokens"), and charged as it charges.
    const bound = request.max_tokens * BYTES_PER_TOKEN_FLOOR;
    const whole = typeof answer === "string" ? answer : answer.text;
    const text = cutToBytes(whole, bound);
    const deltas = keptDeltas(
      typeof answer === "string" || answer.deltas === undefined ? words(text) : answer.deltas,
      bound,
    );
    const reported =
      typeof answer === "object" && answer.usage !== undefined
        ? answer.usage
        : { input_tokens: request.messages.length, output_tokens: Math.min(deltas.length, request.max_tokens) };
    const usage = chargedUsage(reported, request, receivedBytes(text, deltas));
    this.usedTokens += usage.input_tokens + usage.output_tokens;
    const provider =
      (typeof answer === "object" ? answer.provider : undefined) ?? request.provider ?? o.provider ?? "fake";
    return {
      ok: true,
      value: {
        text,
        usage,
        stop_reason: text.length < whole.length ? "max_tokens" : "stop",
        model: request.model,
        provider,
        deltas: boundedDeltas(deltas),
      },
    };
  }
}
