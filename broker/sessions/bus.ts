/**
 * A session's hook bus: which active extensions hook an event, asking them in
 * registry order, composing their answers, and tracing every answer in the
 * ledger. The harness fires its own events here; `cap_call` comes from the
 * broker's capability pipeline, through the session's scope.
 */
import { type WaitChain, waits } from "../base/waits.js";
import { urlWithoutValues } from "../egress/url-without-values.js";
import * as v from "valibot";
import { EventPayloads, type EventName, type EventPayload } from "../../jail-runtime/wire/events.js";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import type { CapCallEvent } from "../caps/context.js";
import { TetherError, WireCode } from "../base/errors.js";
import type { BuiltinHooks } from "../hooks/builtin-hooks.js";
import { compose, type BusHook, type Composed } from "../hooks/compose.js";
import { matchesSubject, subjectOf, type HookSubject } from "../hooks/hook-subject.js";
import { satelliteBusHook } from "./satellite-hooks.js";
import type { SessionScope } from "../kernel/session-scope.js";
import type { Ledger } from "../store/ledger.js";
import type { ActiveSet } from "./active-set.js";
import type { Known } from "./known.js";

/** How often hooks may keep one turn going (`agent_end` blocks) before the bus stops honouring them. */
export const MAX_HELD = 8;

/**
 * The events a harness fires itself: tool_call/tool_result only about its own tools (those of the
 * session's extensions come with `callTool`); route_call comes with `route`, cap_call from the broker.
 */
export type HarnessEvent = Exclude<EventName, "cap_call" | "route_call">;
/** `session_start` payloads may leave out what the session knows (its id and workspace). */
export type HarnessPayload<E extends HarnessEvent> = E extends "session_start"
  ? { readonly source: string }
  : EventPayload<E>;

/** An active extension whose hook for an event takes the subject: its name, what is known of it, and its hook row. */
interface Match {
  readonly name: string;
  readonly k: Known;
  readonly row: Known["hooks"][number];
}

export class SessionBus {
  readonly id: string;
  readonly workspace: string;
  readonly #scope: SessionScope;
  readonly #ledger: Ledger;
  readonly #active: ActiveSet;
  readonly #builtin: BuiltinHooks;
  /** Told every harness event once its payload is checked, before any hook is asked (the session's observers). */
  observed: ((event: HarnessEvent, data: Readonly<Record<string, unknown>>) => void) | null = null;

  constructor(scope: SessionScope, workspace: string, ledger: Ledger, active: ActiveSet, builtin: BuiltinHooks) {
    this.id = scope.id;
    this.workspace = workspace;
    this.#scope = scope;
    this.#ledger = ledger;
    this.#active = active;
    this.#builtin = builtin;
  }

  /**
   * Whether any active extension hooks `event` — about `subject`, when given
   * (a session without hooks, or none that match, pays nothing for the bus).
   */
  hooked(event: EventName, subject?: HookSubject): boolean {
    return this.#matching(event, subject ?? null).length > 0;
  }

  /**
   * Each extension whose hook for `event` takes `subject`, in registry order, leaving out the satellites
   * waiting on the call (`chain`). While an activation boots and prepares, the plan it works toward is the
   * one asked: a preparation's capability calls and acts are asked of the hooks it activates with (their
   * satellites boot when first asked), never made before any hook is in force.
   */
  #matching(event: EventName, subject: HookSubject | null, chain?: WaitChain): Match[] {
    // A plain loop and an array (asked twice on every tool call: no generator, no closure per row).
    const found: Match[] = [];
    const { plan, known } = this.#active.pending ?? this.#active.applied;
    for (const name of plan.active) {
      if (waits(chain, this.id, name)) continue;
      const k = known.get(name)!;
      for (const row of k.hooks)
        if (row.event === event) {
          if (matchesSubject(row.match, subject)) found.push({ name, k, row });
          break;
        }
    }
    return found;
  }

  /**
   * The bus hooks for one event (`#matching`): a hook whose `match` leaves this
   * subject out, or whose satellite waits on the call, is skipped here — no
   * satellite round trip, no trace row.
   */
  #hooksFor(event: EventName, payload: Readonly<Record<string, unknown>>, chain?: WaitChain): BusHook[] {
    const hooks: BusHook[] = [];
    for (const { name, k, row } of this.#matching(event, subjectOf(event, payload), chain)) {
      if (k.builtin) {
        hooks.push(...this.#builtin.hooksFor(event, payload, { sessionId: this.id, workspace: this.workspace }));
        continue;
      }
      const payloadFor = (messages: readonly unknown[] | undefined) =>
        messages === undefined ? payload : { ...payload, messages };
      hooks.push(satelliteBusHook(this.#scope, name, event, row.onError, payloadFor, chain));
    }
    return hooks;
  }

  /** Asks the hooks and composes their answers; `#traced` writes the verdicts to the ledger. */
  async compose(
    event: EventName,
    payload: Readonly<Record<string, unknown>>,
    extra: { chain?: WaitChain; validateArguments?: (args: unknown) => string | null } = {},
  ): Promise<Composed> {
    const hooks = this.#hooksFor(event, payload, extra.chain);
    const messages = event === "context" ? (payload["messages"] as readonly unknown[]) : undefined;
    return compose(event, hooks, {
      ...(extra.validateArguments !== undefined ? { validateArguments: extra.validateArguments } : {}),
      ...(messages !== undefined ? { messages } : {}),
    });
  }

  /** Traces every hook's verdict about one event in the ledger. */
  traced(event: EventName, composed: Composed, subject: string, about: number | null): Composed {
    this.#ledger.trace(
      composed.trace.map((row) => ({
        sessionId: this.id,
        event,
        subject,
        aboutInvocationId: about,
        hookInvocationId: row.invocationId,
        extension: row.extension,
        answer: row.answer,
        detail: row.detail,
        durationMs: Math.round(row.durationMs * 1000) / 1000,
      })),
    );
    return composed;
  }

  /**
   * Fires an event the harness owns (everything but tool_call, tool_result and
   * cap_call, which the session and the broker fire themselves). The payload is
   * checked against the event's schema first.
   */
  async fire<E extends HarnessEvent>(
    event: E,
    payload: HarnessPayload<E>,
    /** When a capability call fires it (`usage` of a model call): the satellites waiting on that call. */
    extra: { chain?: WaitChain } = {},
  ): Promise<Composed> {
    this.#active.refresh();
    const full: unknown =
      event === "session_start" ? { session_id: this.id, workspace: this.workspace, ...payload } : payload;
    const checked = v.safeParse(EventPayloads[event], full);
    if (!checked.success)
      throw new TetherError(WireCode.badArguments, `event '${event}': ${describeIssues(checked.issues)}`);
    const data = checked.output as Record<string, unknown>;
    const subject = event === "tool_call" || event === "tool_result" ? this.#harnessTool(event, data) : "";
    this.observed?.(event, data);
    const composed = this.traced(
      event,
      await this.compose(event, data, extra.chain !== undefined ? { chain: extra.chain } : {}),
      subject,
      null,
    );
    if (
      event === "agent_end" &&
      composed.block !== null &&
      typeof data["held"] === "number" &&
      data["held"] >= MAX_HELD
    ) {
      // Hooks already kept this turn going MAX_HELD times: let it end.
      return {
        ...composed,
        block: null,
        notes: [
          ...composed.notes,
          `${composed.block.by} asked to keep the turn going again; it was already held ${MAX_HELD} times, so ` +
            `the turn ends`,
        ],
      };
    }
    return composed;
  }

  /**
   * The harness's own tool a tool_call/tool_result is fired about (a shell, a file editor the
   * harness runs): never one of the session's, whose hooks `callTool` runs around the call itself
   * — fired from outside too they would be asked twice, or about a call that never ran.
   */
  #harnessTool(event: "tool_call" | "tool_result", data: Readonly<Record<string, unknown>>): string {
    const tool = data["tool"] as string;
    const served = this.#active.tools().find((t) => t.name === tool);
    if (served !== undefined)
      throw new TetherError(
        WireCode.badArguments,
        `event '${event}': '${tool}' is a tool of this session (served by '${served.extension}'): ` +
          `call it with callTool (tool.call), which runs its tool_call and tool_result hooks; fire ` +
          `${event} only about the harness's own tools`,
      );
    return tool;
  }

  /**
   * The `cap_call` stage once the session let go of its scope (closing): no hook can be asked any
   * more, so a capability call one would have been asked about is refused — never made unasked.
   */
  async unaskable(event: CapCallEvent): Promise<{ block: string; by: string } | null> {
    if (event.within.startsWith("event:")) return null;
    const payload = {
      capability: event.capability,
      target: event.target,
      ...(event.request ? { request: event.request } : {}),
    };
    for (const { name } of this.#matching("cap_call", subjectOf("cap_call", payload), event.chain))
      return { block: `session '${this.id}' is closing: '${name}''s cap_call hook can no longer be asked`, by: name };
    return null;
  }

  /** The `cap_call` stage for this session's capability calls. */
  async capCall(event: CapCallEvent): Promise<{ block: string; by: string } | null> {
    // Hooks' own capability calls are not asked about (a guard's kv.get must not ask the guard),
    // nor is any satellite waiting on the call (the caller's own, making this very call, among them).
    if (this.#active.closed || event.within.startsWith("event:")) return null;
    // The judged request (normal forms, resolved addresses with their classes), never the raw spelling.
    const payload = {
      extension: event.extension,
      capability: event.capability,
      target: shownTarget(event.capability, event.target),
      within: event.within,
      ...(event.request !== undefined ? { request: event.request } : {}),
    };
    const composed = this.traced(
      "cap_call",
      await this.compose("cap_call", payload, { chain: event.chain }),
      `${event.capability} ${event.target}`.trim(),
      event.invocationId,
    );
    return composed.block === null ? null : { block: composed.block.reason, by: composed.block.by };
  }
}

/**
 * What other extensions' `cap_call` hooks are shown of a target: a fetch's URL
 * without its credentials, fragment and query values (urlWithoutValues), so one
 * extension's request does not hand its secrets to another.
 */
export function shownTarget(capability: string, target: string): string {
  return capability === "net.fetch" ? urlWithoutValues(target) : target;
}
