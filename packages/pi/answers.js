/**
 * The shapes of `tether serve`'s answers this extension reads (docs/api.md),
 * checked before use: only the fields read are required, others pass.
 */
import * as v from "valibot";

const Text = v.pipe(v.string(), v.maxLength(1024 * 1024));
const Texts = v.pipe(v.array(Text), v.maxLength(1024));
const Verdict = v.nullable(v.object({ reason: Text, by: v.string() }));

export const OpenAnswer = v.object({
  id: v.string(),
  extensions: v.pipe(
    v.array(
      v.object({
        name: v.string(),
        state: v.string(),
        reason: v.nullable(v.string()),
        hooks: v.array(v.string()),
      }),
    ),
    v.maxLength(10_000),
  ),
});

export const ToolsAnswer = v.pipe(
  v.array(
    v.object({
      name: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
      extension: v.string(),
      description: v.pipe(v.string(), v.maxLength(64 * 1024)),
      parameters: v.record(v.string(), v.unknown()),
    }),
  ),
  v.maxLength(10_000),
);

/** One content block of a tool value: text, JSON, or whatever a newer broker sends (shown as JSON). */
const Block = v.looseObject({ type: v.string() });

export const ToolCallAnswer = v.object({
  outcome: v.variant("ok", [
    v.object({
      ok: v.literal(true),
      value: v.object({ content: v.pipe(v.array(Block), v.maxLength(10_000)), terminate: v.boolean() }),
    }),
    v.object({ ok: v.literal(false), error: v.object({ code: v.string(), msg: Text }) }),
  ]),
  extension: v.nullable(v.string()),
  call_id: v.string(),
  invocation_id: v.nullable(v.number()),
  blocked_by: v.nullable(v.string()),
  halt: Verdict,
  context: Texts,
  notes: Texts,
});

export const FireAnswer = v.object({
  block: Verdict,
  halt: Verdict,
  /** tool_call about a pi tool: a hook's new arguments, or a result in the tool's place. */
  rewrite: v.nullable(v.object({ arguments: v.unknown(), by: v.string() })),
  result: v.nullable(v.object({ value: v.unknown(), by: v.string() })),
  context: Texts,
  notes: Texts,
  messages: v.nullable(v.pipe(v.array(v.unknown()), v.maxLength(100_000))),
});

/**
 * `value` checked against `schema`, or an error naming the method (the issue, not the value).
 * @template {v.GenericSchema} S
 * @param {S} schema
 * @param {unknown} value
 * @param {string} method
 * @returns {v.InferOutput<S>}
 */
export function parseAnswer(schema, value, method) {
  const result = v.safeParse(schema, value);
  if (result.success) return result.output;
  const issue = result.issues[0];
  const path = v.getDotPath(issue) ?? "(top)";
  throw new Error(
    `Tether: tether serve's answer to ${method} does not have the shape this @tether/pi expects ` +
      `(at ${path}: ${issue.message}). Use a @tether/pi and a tether of the same release.`,
  );
}

/** @typedef {v.InferOutput<typeof ToolCallAnswer>} ToolCallReport */
/** @typedef {v.InferOutput<typeof FireAnswer>} FireVerdict */
/** @typedef {v.InferOutput<typeof ToolsAnswer>} ToolList */
