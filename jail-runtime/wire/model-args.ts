/**
 * `model.complete`: a completion an extension asks from inside one of its
 * invocations, and what it is answered. Read by the broker
 * (broker/caps/model-complete.ts) and by the test kit's fake
 * (jail-runtime/ext/testing/model.ts) alike, so a call the kit accepts is one
 * the broker accepts. The request is the completion bridge's
 * (`CompletionRequest`, provider-kinds.ts), bounded there.
 */
import * as v from "valibot";
import { CompletionRequest, MAX_COMPLETION_CHARS } from "./provider-kinds.js";

/** The arguments: one completion request. */
export const ModelCompleteArgs = v.object({ request: CompletionRequest });
export type ModelCompleteArgs = v.InferOutput<typeof ModelCompleteArgs>;

export const MODEL_COMPLETE_USAGE =
  "model.complete takes {request: {provider?, model, messages: [{role, content}] (1 to 10000), max_tokens, " +
  "temperature?, stop?}}";

/** The most deltas a reply carries: past it neighbours are merged (the text is whole either way). */
export const MAX_MODEL_DELTAS = 256;

const Count = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER));
const Name = v.pipe(v.string(), v.maxLength(256));

/** The answer: the whole text, its usage, who answered, and the deltas the provider streamed, in order. */
export const ModelCompleteReply = v.strictObject({
  text: v.pipe(v.string(), v.maxLength(MAX_COMPLETION_CHARS)),
  usage: v.strictObject({ input_tokens: Count, output_tokens: Count }),
  stop_reason: v.nullable(v.pipe(v.string(), v.maxLength(64))),
  model: Name,
  provider: Name,
  deltas: v.pipe(v.array(v.pipe(v.string(), v.maxLength(MAX_COMPLETION_CHARS))), v.maxLength(MAX_MODEL_DELTAS)),
});
export type ModelCompleteReply = v.InferOutput<typeof ModelCompleteReply>;

/** At most `max` deltas: past it, neighbours merged into `max` runs (their text unchanged, in order). */
export function boundedDeltas(deltas: readonly string[], max = MAX_MODEL_DELTAS): string[] {
  if (deltas.length <= max) return [...deltas];
  const out: string[] = [];
  const per = Math.ceil(deltas.length / max);
  for (let i = 0; i < deltas.length; i += per) out.push(deltas.slice(i, i + per).join(""));
  return out;
}
