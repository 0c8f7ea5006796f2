/**
 * An extension's hook as the bus asks it: one `event` invocation of its
 * satellite, the answer decoded and checked against the event's verdict schema.
 * Nothing a satellite answers is trusted: a verdict that does not fit its event
 * is a failed hook (a note, or a block with `on_error = "block"`), not a partial
 * verdict.
 */
import type { WaitChain } from "../base/waits.js";
import * as v from "valibot";
import { DocumentBoundsError, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import { EventVerdicts, type EventName } from "../../jail-runtime/wire/events.js";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import type { SessionScope } from "../kernel/session-scope.js";
import { WireCode } from "../base/errors.js";
import type { BusHook, HookAnswer, Verdict } from "../hooks/compose.js";

/** Longest failure text kept from a satellite's error message. */
const MAX_REASON = 500;

function bounded(text: string): string {
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON)}…` : text;
}

/** Decodes a hook's answer (JSON text) and checks it against the event's verdict schema. */
export function decodeVerdict(
  event: EventName,
  value: unknown,
): { ok: true; verdict: Verdict } | { ok: false; reason: string } {
  if (typeof value !== "string") return { ok: false, reason: "answered something other than a verdict's JSON text" };
  let parsed: unknown;
  try {
    parsed = parseBoundedJson(value);
  } catch (err) {
    if (err instanceof DocumentBoundsError) return { ok: false, reason: `answered a verdict ${err.message}` };
    return { ok: false, reason: "answered a verdict that is not JSON" };
  }
  const checked = v.safeParse(EventVerdicts[event], parsed);
  if (!checked.success)
    return { ok: false, reason: `answered a verdict that does not fit '${event}': ${describeIssues(checked.issues)}` };
  // usage answers are ignored whatever they hold; everything else is exactly the event's verdict.
  return { ok: true, verdict: event === "usage" ? {} : (checked.output as Verdict) };
}

/** Asks `extension`'s hook for `event` in the session of `scope`, as a `HookAnswer`. */
export async function askSatelliteHook(
  scope: SessionScope,
  extension: string,
  event: EventName,
  payload: unknown,
  chain?: WaitChain,
): Promise<HookAnswer> {
  let result;
  try {
    result = await scope.callHook(extension, event, JSON.stringify(payload), chain !== undefined ? { chain } : {});
  } catch (err) {
    return { kind: "failed", reason: bounded((err as Error).message) };
  }
  const { outcome, invocationId } = result;
  const id = invocationId ?? undefined;
  if (!outcome.ok) {
    if (outcome.error.code === WireCode.unhandled)
      return { kind: "unhandled", ...(id !== undefined ? { invocationId: id } : {}) };
    return {
      kind: "failed",
      reason: bounded(`${outcome.error.code}: ${outcome.error.msg}`),
      ...(id !== undefined ? { invocationId: id } : {}),
    };
  }
  const decoded = decodeVerdict(event, outcome.value);
  if (!decoded.ok) return { kind: "failed", reason: decoded.reason, ...(id !== undefined ? { invocationId: id } : {}) };
  return { kind: "verdict", verdict: decoded.verdict, ...(id !== undefined ? { invocationId: id } : {}) };
}

/** One extension's hook as a `BusHook`; `payloadFor` builds the payload (for `context`, from the chain so far). */
export function satelliteBusHook(
  scope: SessionScope,
  extension: string,
  event: EventName,
  onError: "note" | "block",
  payloadFor: (messages: readonly unknown[] | undefined) => unknown,
  chain?: WaitChain,
): BusHook {
  return {
    extension,
    onError,
    ask: (messages) => askSatelliteHook(scope, extension, event, payloadFor(messages), chain),
  };
}
