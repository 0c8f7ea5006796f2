/**
 * Reported acts on the wire: the `act.before` and `act.after` capability
 * calls an extension makes to report an act of its own (send mail, charge a
 * card) to the session's hooks, and the broker's answers. The broker, the SDK
 * (jail-runtime/cap/act.ts) and the test kit read them from here.
 */
import * as v from "valibot";

/** An act's name: lowercase words of a-z, 0-9, `_` and `-`, joined by dots (`mail.submit`), at most 64. */
export const ACT_NAME = /^[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)*$/;
export const MAX_ACT_NAME = 64;
/** The most bytes (UTF-8) of JSON an act's arguments may take — a hook's rewrite too (the hooks see them whole). */
export const MAX_ACT_ARGUMENTS = 64 * 1024;
/** The most bytes (UTF-8) of JSON an act's output (or error) may take when the hooks are told it. */
export const MAX_ACT_RESULT = 256 * 1024;
/** Acts one invocation may have begun and not yet ended at once. */
export const MAX_OPEN_ACTS = 64;
/**
 * Acts one invocation may report in all: each asks every hook of the session and leaves its rows and
 * its context in the call's report, so a loop of acts is bounded here, not by the deadline.
 */
export const MAX_ACTS_PER_INVOCATION = 256;

/** The size of `value` as UTF-8 JSON (a value JSON cannot hold counts as too large). */
export function jsonBytes(value: unknown): number {
  try {
    return new TextEncoder().encode(JSON.stringify(value) ?? "null").length;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

export const ActName = v.pipe(
  v.string(),
  v.maxLength(MAX_ACT_NAME, "expected an act name of at most 64 characters"),
  v.regex(
    ACT_NAME,
    "expected an act name: lowercase a-z, 0-9, _ and -, dots between words (mail.submit), starting with a letter",
  ),
);

/** The id the broker gives a begun act (the hooks' `call_id`). */
export const ActCallId = v.pipe(v.string(), v.minLength(1), v.maxLength(128));

/** `act.before`: the act's name and the arguments it would run with. */
export const ActBeforeArgs = v.object({ name: ActName, arguments: v.unknown() });
export const ACT_BEFORE_USAGE = "act.before takes {name, arguments}";

/** `act.after`: how the begun act `call_id` ended: its output (`ok`), or its error. */
export const ActAfterArgs = v.object({ call_id: ActCallId, ok: v.boolean(), result: v.unknown() });
export const ACT_AFTER_USAGE = "act.after takes {call_id, ok, result}";

const Stopped = v.object({ reason: v.string(), by: v.string() });

/** What `act.before` answers (as the JSON text of its `json`): go ahead with `arguments`, or blocked. */
export const ActBeforeReply = v.union([
  v.object({ call_id: ActCallId, arguments: v.unknown(), rewritten_by: v.nullable(v.string()) }),
  v.object({ call_id: ActCallId, blocked: Stopped }),
]);
export type ActBeforeReply = v.InferOutput<typeof ActBeforeReply>;

/** What `act.after` answers: `withheld` when a `tool_result` hook blocked the output. */
export const ActAfterReply = v.object({ withheld: v.nullable(Stopped) });
export type ActAfterReply = v.InferOutput<typeof ActAfterReply>;
