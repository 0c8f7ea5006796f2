/**
 * The `within` of a `tool_call` or `tool_result` payload about a reported act
 * (jail-runtime/wire/act-args.ts): the invocation that reported it — its
 * ledger row, its extension, its kind and name, and the session's id for the
 * tool call when the act came from one. Absent on a tool call's own payload.
 */
import * as v from "valibot";

const Short = v.pipe(v.string(), v.maxLength(128));

export const ActWithin = v.optional(
  v.object({
    /** The reporting invocation's ledger row (`invocations.id`); null when it has none. */
    invocation_id: v.nullable(v.pipe(v.number(), v.integer(), v.minValue(0))),
    /** The extension that reported the act. */
    extension: Short,
    /** The reporting invocation's kind (`tool`, `command`, …) and name. */
    kind: Short,
    name: Short,
    /** The tool call's `call_id` (as its own `tool_call` hooks saw it), when a tool reported the act. */
    call_id: v.optional(Short),
  }),
);
export type ActWithin = v.InferOutput<typeof ActWithin>;
