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

/**
 * What the budget charges is never less than the text itself bears: at least one
 * token for every 8 UTF-8 bytes (real tokenizers average about 4 on English and
 * code), whatever usage a provider reports — a provider is another extension.
 * The broker (broker/caps/model-complete.ts) and the test kit's fake charge alike.
 */
export const BYTES_PER_TOKEN_FLOOR = 8;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The UTF-8 length of `text`. */
export const utf8Length = (text: string): number => encoder.encode(text).length;

/** The fewest tokens `bytes` of text are charged. */
export const floorTokens = (bytes: number): number => Math.ceil(bytes / BYTES_PER_TOKEN_FLOOR);

/** The fewest tokens a request's input is charged: its JSON's bytes over the floor. */
export const inputFloor = (request: unknown): number => floorTokens(utf8Length(JSON.stringify(request)));

/** `text` cut to at most `bytes` UTF-8 bytes, on a character boundary. */
export function cutToBytes(text: string, bytes: number): string {
  if (text.length * 3 <= bytes) return text;
  const buf = encoder.encode(text);
  if (buf.length <= bytes) return text;
  let end = bytes;
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return decoder.decode(buf.subarray(0, end));
}

/**
 * The output bytes the asker received: the kept text, or the deltas passed on when they stream that
 * same text (whichever is longer); both, when a provider streamed one thing and answered another.
 */
export function receivedBytes(text: string, deltas: readonly string[]): number {
  const streamed = deltas.join("");
  const same = text.startsWith(streamed) || streamed.startsWith(text);
  return same ? Math.max(utf8Length(text), utf8Length(streamed)) : utf8Length(text) + utf8Length(streamed);
}

/**
 * The usage charged for a reply: the reported count, never below the floors — of the request, and of the
 * most the asker received as output (`outputBytes`: the kept text or the deltas passed on, whichever is
 * more; a provider may stream one thing and answer another).
 */
export function chargedUsage(
  reported: { readonly input_tokens: number; readonly output_tokens: number },
  request: unknown,
  outputBytes: number,
): { input_tokens: number; output_tokens: number } {
  return {
    input_tokens: Math.max(reported.input_tokens, inputFloor(request)),
    output_tokens: Math.max(reported.output_tokens, floorTokens(outputBytes)),
  };
}

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
