/**
 * One session-facing invocation (a context loader, a preparation, a close)
 * asked of an extension through the session's scope, and its answer checked
 * against its kind's schema. Nothing a satellite answers is trusted: JSON past
 * the document bounds, or a field its kind does not take, is a failure, never
 * a partial answer.
 */
import * as v from "valibot";
import { DocumentBoundsError, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import {
  SessionAnswers,
  type SessionAnswer,
  type SessionKind,
  type SessionPayload,
} from "../../jail-runtime/wire/session-kinds.js";
import { TetherError, WireCode } from "../base/errors.js";
import type { SessionScope } from "../kernel/session-scope.js";

/** Longest failure text kept from a satellite's message (a reason quotes it). */
const MAX_PROBLEM = 500;

const bounded = (text: string): string => (text.length > MAX_PROBLEM ? `${text.slice(0, MAX_PROBLEM)}…` : text);

/** The checked answer, or what went wrong as `<code>: <msg>`. */
export type Asked<K extends SessionKind> =
  | { readonly ok: true; readonly answer: SessionAnswer<K>; readonly invocationId: number | null }
  | { readonly ok: false; readonly problem: string; readonly invocationId: number | null };

/** Checks the JSON text a satellite answered for `kind`: the answer, or why it does not fit. */
export function decodeSessionAnswer<K extends SessionKind>(
  kind: K,
  text: string,
): { ok: true; answer: SessionAnswer<K> } | { ok: false; problem: string } {
  let parsed: unknown;
  try {
    parsed = parseBoundedJson(text);
  } catch (err) {
    const why = err instanceof DocumentBoundsError ? err.message : "not JSON";
    return { ok: false, problem: `${WireCode.crashed}: it answered ${why}` };
  }
  const checked = v.safeParse(SessionAnswers[kind], parsed);
  if (!checked.success)
    return {
      ok: false,
      problem:
        `${WireCode.crashed}: it answered what a ${kind} answer may not ` +
        `hold: ${bounded(describeIssues(checked.issues))}`,
    };
  return { ok: true, answer: checked.output as SessionAnswer<K> };
}

/** Asks `extension` one invocation of `kind`; never rejects (a broker refusal is a problem too). */
export async function askSessionKind<K extends SessionKind>(
  scope: SessionScope,
  extension: string,
  kind: K,
  name: string,
  payload: SessionPayload<K>,
): Promise<Asked<K>> {
  let result;
  try {
    result = await scope.invoke(extension, kind, name, JSON.stringify(payload));
  } catch (err) {
    const code = err instanceof TetherError ? err.code : WireCode.crashed;
    return { ok: false, problem: bounded(`${code}: ${(err as Error).message}`), invocationId: null };
  }
  const { outcome, invocationId } = result;
  if (!outcome.ok) return { ok: false, problem: bounded(`${outcome.error.code}: ${outcome.error.msg}`), invocationId };
  const decoded = decodeSessionAnswer(kind, outcome.value);
  return decoded.ok
    ? { ok: true, answer: decoded.answer, invocationId }
    : { ok: false, problem: decoded.problem, invocationId };
}
