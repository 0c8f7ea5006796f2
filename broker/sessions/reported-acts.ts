/**
 * Reported acts, the session's side (docs/hooks.md, "Reported acts"): an
 * extension's `act.before` asks the session's `tool_call` hooks about an act
 * of its own — payload `{tool: <act>, call_id, arguments, within}` — composed
 * as for a tool call (first block wins, a halt blocks too, the first rewrite
 * wins and is checked against the act's `[[act]] parameters`, context and
 * notes add up); its `act.after` tells the `tool_result` hooks the output,
 * and a block there withholds it from the extension. The reporting
 * extension's own hooks are not asked (its satellite is busy reporting).
 * Every verdict is traced (subject: the act, about: the reporting
 * invocation), and the context and notes join the report of the tool call
 * whose invocation reported the act (`hear`, used by hooked-call.ts).
 */
import { jsonBytes, MAX_ACT_ARGUMENTS } from "../../jail-runtime/wire/act-args.js";
import type { ActAfterAsk, ActBeforeAnswer, ActBeforeAsk, ActReporter, SessionActs } from "../base/act-port.js";
import type { ToolArgsChecker } from "../base/tool-args.js";
import type { Composed, TraceRow } from "../hooks/compose.js";
import type { ActiveSet } from "./active-set.js";
import type { SessionBus } from "./bus.js";

/** What the acts reported inside one tool call added to its report. */
export interface HeardActs {
  readonly context: string[];
  readonly notes: string[];
  readonly trace: TraceRow[];
  /** A hook's halt of one of the acts: the turn should end (the act was blocked). */
  halt: { readonly reason: string; readonly by: string } | null;
}

/** One tool call listening for the acts its invocation reports. */
export interface ActListener {
  /** The call's invocation has its ledger row: acts reported under it are heard from now on. */
  at(invocationId: number): void;
  /** Stops listening; what the acts added. */
  take(): HeardActs;
}

export class ReportedActs implements SessionActs {
  readonly #bus: SessionBus;
  readonly #active: ActiveSet;
  readonly #toolArgs: ToolArgsChecker;
  /** The tool calls listening, by their invocation's ledger id. */
  readonly #listening = new Map<number, { readonly callId: string; readonly heard: HeardActs }>();

  constructor(bus: SessionBus, active: ActiveSet, toolArgs: ToolArgsChecker) {
    this.#bus = bus;
    this.#active = active;
    this.#toolArgs = toolArgs;
  }

  /** For the tool call `callId`: hears the acts its invocation reports, until `take`. */
  hear(callId: string): ActListener {
    const heard: HeardActs = { context: [], notes: [], trace: [], halt: null };
    let bound: number | null = null;
    return {
      at: (invocationId) => {
        bound = invocationId;
        this.#listening.set(invocationId, { callId, heard });
      },
      take: () => {
        if (bound !== null) this.#listening.delete(bound);
        return heard;
      },
    };
  }

  async before(ask: ActBeforeAsk): Promise<ActBeforeAnswer> {
    const unfit = this.#checker(ask);
    const problem = unfit?.(ask.arguments) ?? null;
    if (problem !== null) return { verdict: "unfit", problem };
    // Closed between the judge and here: no hook can be asked, so the act does not run unasked.
    if (this.#active.closed)
      return { verdict: "blocked", reason: "the session closed: its hooks can no longer be asked", by: "session" };
    const payload = { tool: ask.act, call_id: ask.callId, arguments: ask.arguments, within: this.#within(ask) };
    const composed = await this.#bus.compose("tool_call", payload, {
      chain: ask.chain,
      // A hook's rewrite is held to what the act's own arguments are: its [[act]] parameters and the size bound.
      validateArguments: (value) =>
        jsonBytes(value) > MAX_ACT_ARGUMENTS
          ? `the rewritten arguments are more than ${MAX_ACT_ARGUMENTS} bytes of JSON`
          : (unfit?.(value) ?? null),
    });
    this.#bus.traced("tool_call", composed, ask.act, ask.invocationId);
    const heard = this.#add(ask.invocationId, composed);
    if (composed.result !== null)
      heard?.notes.push(
        `${composed.result.by}'s substitute result does not apply to a reported act; '${ask.act}' went ahead`,
      );
    const stopped = composed.block ?? composed.halt;
    if (stopped !== null) {
      if (composed.block === null && heard !== undefined) heard.halt ??= composed.halt;
      return { verdict: "blocked", reason: stopped.reason, by: stopped.by };
    }
    if (composed.rewrite !== null)
      return { verdict: "proceed", arguments: composed.rewrite.arguments, rewrittenBy: composed.rewrite.by };
    return { verdict: "proceed", arguments: ask.arguments, rewrittenBy: null };
  }

  async after(ask: ActAfterAsk): Promise<{ withheld: { reason: string; by: string } | null }> {
    if (this.#active.closed) return { withheld: null };
    const payload = {
      tool: ask.act,
      call_id: ask.callId,
      arguments: ask.arguments,
      ok: ask.ok,
      result: ask.result,
      started_ms: ask.startedMs,
      finished_ms: ask.finishedMs,
      within: this.#within(ask),
    };
    const composed = await this.#bus.compose("tool_result", payload, { chain: ask.chain });
    this.#bus.traced("tool_result", composed, ask.act, ask.invocationId);
    const heard = this.#add(ask.invocationId, composed);
    if (heard !== undefined) heard.halt ??= composed.halt;
    return { withheld: composed.block };
  }

  /** The reporting invocation, as the hooks are shown it. */
  #within(ask: ActReporter) {
    const callId = ask.invocationId === null ? undefined : this.#listening.get(ask.invocationId)?.callId;
    return {
      invocation_id: ask.invocationId,
      extension: ask.extension,
      kind: ask.kind,
      name: ask.name,
      ...(callId !== undefined ? { call_id: callId } : {}),
    };
  }

  /** Context and notes of the act's hooks, to the tool call that reported it (when one listens). */
  #add(invocationId: number | null, composed: Composed): HeardActs | undefined {
    const heard = invocationId === null ? undefined : this.#listening.get(invocationId)?.heard;
    heard?.context.push(...composed.context);
    heard?.notes.push(...composed.notes);
    heard?.trace.push(...composed.trace);
    return heard;
  }

  /** Why a value does not fit the act's `[[act]] parameters` (null: it fits); null when it declares none. */
  #checker(ask: ActBeforeAsk): ((value: unknown) => string | null) | null {
    const known = this.#active.applied.known.get(ask.extension);
    const row = known?.installed?.manifest.act.find((a) => a.name === ask.act);
    if (row?.parameters === undefined) return null;
    const key = `${known?.installed?.manifestHash ?? ""}:act:${ask.act}`;
    return (value) => {
      const checked = this.#toolArgs.check(key, row.parameters!, JSON.stringify(value ?? null));
      return checked.ok ? null : checked.msg;
    };
  }
}
