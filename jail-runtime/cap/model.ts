/**
 * `model`: a completion asked of a model provider the broker serves, from
 * inside an invocation. Declared with `[model]` in the manifest (a token
 * budget per call and per day, optionally only some providers) and judged per
 * call; exclusive work for a session: refused (`busy_session`) while a run of
 * the session is active, while another model call of it is in flight, or once
 * it is closing.
 */
import { callCap } from "./invocation.js";

/** One message of the conversation handed to the model. */
export interface ModelMessage {
  readonly role: "system" | "user" | "assistant";
  readonly content: string;
}

/**
 * What to ask: the model, the messages and the most tokens it may answer; a
 * provider by name, or else the first that offers the model.
 */
export interface ModelRequest {
  readonly provider?: string;
  readonly model: string;
  readonly messages: readonly ModelMessage[];
  readonly max_tokens: number;
  readonly temperature?: number;
  readonly stop?: readonly string[];
}

/** The whole completion, its usage, and who answered. */
export interface ModelCompletion {
  readonly text: string;
  readonly usage: { readonly input_tokens: number; readonly output_tokens: number };
  readonly stop_reason: string | null;
  readonly model: string;
  readonly provider: string;
  /** The deltas the provider streamed, in order (neighbours merged past 256); they add up to `text`. */
  readonly deltas: readonly string[];
}

export interface CompleteOptions {
  /**
   * Told each delta, in order, once the reply is here (the wire has no
   * mid-call push into the jail; the invocation's caller already saw each as
   * a partial while the provider streamed).
   */
  readonly onDelta?: (text: string) => void;
}

/**
 * Asks a model for a completion. Rejects with `CapError`: `denied` (not
 * approved, past a budget, a provider the approval does not list, a
 * `cap_call` hook), `busy_session` (a run is active, another call in flight,
 * the session closing), `unreachable` (the provider failed).
 *
 * @example
 * ```ts
 * import { model } from "@tether/cap";
 * const reply = await model.complete(
 *   { model: "gpt-4o-mini", messages: [{ role: "user", content: "Summarise: …" }], max_tokens: 200 },
 *   { onDelta: (text) => console.log(text) },
 * );
 * console.log(reply.text, reply.usage.output_tokens);
 * ```
 */
export async function complete(request: ModelRequest, options: CompleteOptions = {}): Promise<ModelCompletion> {
  const messages: ModelMessage[] = [];
  for (let i = 0; i < request.messages.length; i++) {
    const m = request.messages[i]!;
    messages[i] = { role: m.role, content: String(m.content) };
  }
  const asked: Record<string, unknown> = { model: String(request.model), messages, max_tokens: request.max_tokens };
  if (request.provider !== undefined) asked["provider"] = String(request.provider);
  if (request.temperature !== undefined) asked["temperature"] = request.temperature;
  if (request.stop !== undefined) asked["stop"] = request.stop;
  const reply = (await callCap("model.complete", { request: asked })) as ModelCompletion;
  const onDelta = options.onDelta;
  if (onDelta !== undefined) for (let i = 0; i < reply.deltas.length; i++) onDelta(reply.deltas[i]!);
  return reply;
}
