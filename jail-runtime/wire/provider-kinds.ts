/**
 * Model providers (`[[provider]]`): the completion a harness asks of one, as
 * the provider extension is handed it (kind `complete`) and as it answers,
 * defined once as valibot schemas for the SDK and the broker. Both travel as
 * JSON text. The catalog (models, windows, prices) is static in the manifest.
 */
import * as v from "valibot";

const Text = (max: number) => v.pipe(v.string(), v.maxLength(max));
const Count = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER));
const Name = v.pipe(v.string(), v.maxLength(256));

/** The most one message's content may hold: 1 MiB of characters. */
export const MAX_MESSAGE_CHARS = 1024 * 1024;
/** The most messages one completion may carry. */
export const MAX_MESSAGES = 10_000;
/** The most a completion's text may hold: 4 MiB of characters. */
export const MAX_COMPLETION_CHARS = 4 * 1024 * 1024;
/** The most the whole request may hold as JSON: 8 MiB. */
export const MAX_COMPLETION_REQUEST_BYTES = 8 * 1024 * 1024;

export const ChatMessage = v.strictObject({
  role: v.picklist(["system", "user", "assistant"]),
  content: Text(MAX_MESSAGE_CHARS),
});
export type ChatMessage = v.InferOutput<typeof ChatMessage>;

/** What a harness asks: the same fields the provider is handed, less what the broker fills in. */
export const CompletionRequest = v.strictObject({
  /** The provider by name; left out, the first eligible one that offers `model`. */
  provider: v.optional(Name),
  model: v.pipe(Name, v.minLength(1)),
  messages: v.pipe(v.array(ChatMessage), v.minLength(1), v.maxLength(MAX_MESSAGES)),
  max_tokens: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000_000)),
  temperature: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(2))),
  stop: v.optional(v.pipe(v.array(Text(256)), v.maxLength(16))),
});
export type CompletionRequest = v.InferOutput<typeof CompletionRequest>;

/** The payload of kind `complete`: the request, the provider row's endpoint and secret, and who asked. */
export const CompletePayload = v.object({
  provider: Name,
  model: Name,
  messages: v.pipe(v.array(ChatMessage), v.maxLength(MAX_MESSAGES)),
  max_tokens: Count,
  temperature: v.optional(v.number()),
  stop: v.optional(v.array(Text(256))),
  /** The `[[provider]] base_url` of the manifest ("" when none): where the API is. */
  base_url: Text(2048),
  /** The `[[provider]] secret` of the manifest: pass it to `net.fetch` as `{ secret }` (null: none). */
  secret: v.nullable(Name),
  /** The session the completion was asked for, or null. */
  session_id: v.nullable(Name),
});

export const Usage = v.strictObject({ input_tokens: Count, output_tokens: Count });
export type Usage = v.InferOutput<typeof Usage>;

/** The answer: the whole completion (the partials were only its deltas) and its usage. */
export const CompleteAnswer = v.strictObject({
  text: Text(MAX_COMPLETION_CHARS),
  usage: Usage,
  /** Why it stopped, as the API said it (`stop`, `end_turn`, `length`…). */
  stop_reason: v.optional(v.nullable(Text(64))),
  /** The model that answered, as the API named it. */
  model: v.optional(Name),
});
