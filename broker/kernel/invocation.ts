/**
 * One invocation of a live satellite: its ledger row, the capability
 * dispatcher that serves what it asks while it runs, and its time limit —
 * counted from when it is asked when its kind says the wait counts (a hook
 * queued behind a long call is late: `timeout`).
 */
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";
import { WireCode } from "../base/errors.js";
import type { InvokeOptions } from "../base/invocation.js";
import type { InvocationOutcome } from "../base/outcome.js";
import { capDispatcher, type CapEnvironment } from "../caps/dispatcher.js";
import { InvocationEnd } from "../caps/invocation-end.js";
import type { Registry } from "../registry/registry.js";
import type { Ledger } from "../store/ledger.js";
import type { ApprovalChanges } from "./approval-changes.js";
import { InvocationCaps } from "./invocation-caps.js";
import type { CallResult, Live, ScopeCallOptions, SessionScope } from "./session-scope.js";

export interface InvocationParts {
  readonly ledger: Ledger;
  readonly registry: Registry;
  readonly approvals: ApprovalChanges;
  readonly caps: CapEnvironment;
  /** How long past its limit an invocation whose wait counts is given before it is called late. */
  readonly graceMs: number;
}

export interface Invocation<K extends AnyKind> {
  readonly live: Live;
  readonly scope: SessionScope;
  readonly kind: K;
  readonly name: string;
  readonly args: string;
  readonly deadlineMs: number;
  readonly options: ScopeCallOptions;
}

/** What names an invocation refused before it reached the satellite. */
export interface Refused {
  readonly scope: SessionScope;
  readonly extension: string;
  readonly kind: AnyKind;
  readonly name: string;
  readonly options: ScopeCallOptions;
}

/** Writes the ledger row of an invocation refused before it reached the satellite (the caller named a real row). */
export function recordRefusal(parts: InvocationParts, call: Refused, code: string): number {
  const id = parts.ledger.begin({
    sessionId: call.scope.id,
    extension: call.extension,
    kind: call.kind,
    name: call.name,
    strand: call.options.strand ?? "",
    hooksBypassed: call.options.hooksBypassed === true,
  });
  call.options.onInvocation?.(id);
  parts.ledger.finish(id, code);
  return id;
}

/** The invocation with its time limit covering the wait for the satellite: late is `timeout`, named by `what`. */
export function timedInvocation<K extends AnyKind>(
  parts: InvocationParts,
  call: Invocation<K>,
  what: string,
): Promise<CallResult<K>> {
  // The slot keeps the limit with one timer on the queued job (an AbortSignal per hook, with
  // its listeners, cost several times more on the hook path).
  return runInvocation(parts, call, {
    afterMs: call.deadlineMs + parts.graceMs,
    message: `${what} passed its time limit of ${call.deadlineMs} ms`,
  });
}

/** One invocation of a live satellite, with its ledger row and capability dispatcher. */
export async function runInvocation<K extends AnyKind>(
  parts: InvocationParts,
  call: Invocation<K>,
  late?: InvokeOptions["late"],
): Promise<CallResult<K>> {
  const { live, scope, kind, name, args, deadlineMs, options } = call;
  const extension = live.slot.name;
  const strand = options.strand ?? "";
  const id = parts.ledger.begin({
    sessionId: scope.id,
    extension,
    kind,
    name,
    strand,
    hooksBypassed: options.hooksBypassed === true,
  });
  options.onInvocation?.(id);
  // Capability work of this invocation stops when it ends, whatever ends it. Made at the
  // first capability call (most invocations make none).
  const ended = new InvocationEnd();
  const dispatch = capDispatcher(parts.caps, new InvocationCaps(parts, scope, live, id, deadlineMs, ended, options));
  let outcome: InvocationOutcome<K>;
  try {
    outcome = await live.slot.invoke(
      { kind, name, args, strand, deadlineMs },
      {
        signal: options.signal,
        onReport: options.onReport,
        dispatch,
        late,
      },
    );
  } catch (err) {
    parts.ledger.finish(id, WireCode.crashed);
    throw err;
  } finally {
    ended.end();
  }
  parts.ledger.finish(id, outcome.ok ? "ok" : outcome.error.code);
  return { outcome, invocationId: id };
}
