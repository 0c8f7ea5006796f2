/**
 * A session: which extensions are active for one workspace, and the hook bus
 * that asks them about what happens in it.
 *
 *   open ──► plan (preferences ∩ approved ∩ requires ∩ no collisions)
 *        ──► boot each planned satellite (a failure makes it, and everything
 *            that requires it, inactive; re-plan until nothing changes)
 *        ──► active set swapped in at once
 *
 * `reload` runs the same steps beside the live set and swaps only at the end:
 * a failed boot leaves that extension inactive with the reason and its wanted
 * preference saved for the next reload; an error mid-way leaves the session as
 * it was. A lost approval (revoked or changed in any process) is noticed on the
 * next call: the extension and its dependents drop out, the rest keep working.
 */
import { randomUUID } from "node:crypto";
import * as v from "valibot";
import { EventPayloads, type EventName, type EventPayload } from "../../jail-runtime/wire/events.js";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import type { Broker, CallOptions } from "../broker.js";
import type { CapCallEvent } from "../caps/context.js";
import type { SessionPolicy } from "../caps/policy.js";
import { BrokerCode, TetherError, WireCode } from "../errors.js";
import { BUILTIN_HOOKS_NAME, BUILTIN_HOOKS_PRIORITY, BUILTIN_HOOK_EVENTS, BuiltinHooks } from "../hooks/builtin-hooks.js";
import { compose, type BusHook, type Composed, type TraceRow } from "../hooks/compose.js";
import { satelliteBusHook } from "../hooks/satellite-hooks.js";
import type { Installed } from "../registry/registry.js";
import { replyOf } from "../outcome.js";
import type { InvocationOutcome, ToolReply } from "../satellite/process.js";
import { planActivation, type Candidate, type Plan } from "./activation.js";
import { Preferences, type Preference } from "./preferences.js";
import { SessionRecords } from "./session-records.js";
import { streamed, type Step } from "./stream.js";
import { CALLER_JSON_BOUNDS, DocumentBoundsError, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";

/** How often hooks may keep one turn going (`agent_end` blocks) before the bus stops honouring them. */
export const MAX_HELD = 8;

export interface SessionOptions {
  readonly id: string;
  /** The folder the session works in: command hooks run there. */
  readonly workspace: string;
  readonly policy?: SessionPolicy;
}

export type ExtensionState = "active" | "inactive" | "disabled";

export interface ExtensionStatus {
  readonly name: string;
  readonly state: ExtensionState;
  /** Why it is not active (null when active). */
  readonly reason: string | null;
  readonly builtin: boolean;
  readonly preference: Preference;
  readonly priority: number;
  readonly requires: readonly string[];
  readonly tools: readonly string[];
  readonly commands: readonly string[];
  readonly hooks: readonly string[];
}

export interface ReloadReport {
  readonly activated: readonly string[];
  readonly deactivated: readonly string[];
  /** Wanted but not active, with why; their preference stays saved, so the next reload retries. */
  readonly failed: readonly { readonly name: string; readonly reason: string }[];
}

/** What one tool call came to, hooks included. */
export interface ToolCallReport {
  readonly outcome: InvocationOutcome;
  readonly extension: string | null;
  readonly callId: string;
  /** The ledger row of the call (also for a blocked or substituted one). */
  readonly invocationId: number | null;
  /** The arguments the tool ran with (JSON text): the caller's, or a hook's rewrite. */
  readonly arguments: string;
  readonly rewrittenBy: string | null;
  readonly substitutedBy: string | null;
  readonly blockedBy: string | null;
  /** A hook asked to end the turn. */
  readonly halt: { readonly reason: string; readonly by: string } | null;
  /** Text the model reads before its next request (tool_call and tool_result hooks). */
  readonly context: readonly string[];
  /** Shown to the user only. */
  readonly notes: readonly string[];
  readonly trace: readonly TraceRow[];
}

/** The events a harness fires itself; tool_call/tool_result come with `callTool`, cap_call from the broker. */
export type HarnessEvent = Exclude<EventName, "tool_call" | "tool_result" | "cap_call">;
/** `session_start` payloads may leave out what the session knows (its id and workspace). */
export type HarnessPayload<E extends HarnessEvent> = E extends "session_start" ? { readonly source: string } : EventPayload<E>;

/** One extension the session knows of: installed or built in. */
interface Known {
  readonly name: string;
  readonly builtin: boolean;
  readonly priority: number;
  readonly requires: readonly string[];
  readonly tools: readonly string[];
  readonly commands: readonly string[];
  readonly hooks: readonly { readonly event: string; readonly onError: "note" | "block" }[];
  readonly installed: Installed | null;
  readonly notApproved: string | null;
}

interface Applied {
  readonly plan: Plan;
  readonly known: ReadonlyMap<string, Known>;
  /** Why a wanted extension failed to activate (boot failure, mismatch, broken hooks.json). */
  readonly failed: ReadonlyMap<string, string>;
}

/** A hook's substitute result as callers receive a tool's reply (JSON blocks parsed, as the broker hands them out). */
function toolValueOf(substitute: unknown): ToolReply {
  const reply = replyOf({ ok: true, value: substitute });
  if (reply !== null) return reply;
  if (typeof substitute === "string") return { content: [{ type: "text", text: substitute }], terminate: false };
  return { content: [{ type: "json", json: substitute }], terminate: false };
}

export class Session {
  readonly id: string;
  readonly workspace: string;
  readonly #broker: Broker;
  readonly #preferences: Preferences;
  readonly #records: SessionRecords;
  readonly #builtin: BuiltinHooks;
  #policy: SessionPolicy;
  #applied: Applied;
  #epoch: number;
  #closed = false;

  private constructor(broker: Broker, options: SessionOptions, applied: Applied, epoch: number) {
    this.#broker = broker;
    this.id = options.id;
    this.workspace = options.workspace;
    this.#policy = options.policy ?? {};
    this.#preferences = new Preferences(broker.store);
    this.#records = new SessionRecords(broker.store);
    this.#builtin = new BuiltinHooks(broker.home);
    this.#applied = applied;
    this.#epoch = epoch;
  }

  /**
   * Opens (or reopens) a session and activates its extensions: each installed,
   * approved extension that is wanted here (its global default, overridden per
   * session), booted whole or not at all.
   */
  static async open(broker: Broker, options: SessionOptions): Promise<Session> {
    if (broker.hasSession(options.id)) {
      throw new TetherError(BrokerCode.sessionInUse, `Session '${options.id}' is already open on this broker; close it first or use another id`);
    }
    const records = new SessionRecords(broker.store);
    const record = records.open(options.id, options.workspace, options.policy ?? {});
    broker.setSessionPolicy(record.id, record.policy);
    const session = new Session(broker, { ...options, id: record.id, policy: record.policy }, emptyApplied(), broker.approvalEpoch);
    // Claimed before the boots, so a second open of the id during them is refused too.
    broker.setSessionCapHooks(session.id, (event) => session.#capCall(event));
    try {
      const { applied } = await session.#activate(new Set());
      session.#applied = applied;
    } catch (err) {
      broker.setSessionCapHooks(session.id, null);
      throw err;
    }
    return session;
  }

  get policy(): SessionPolicy {
    return this.#policy;
  }

  /** Narrows (or widens back to the approvals) what this session's capability calls may do. */
  setPolicy(policy: SessionPolicy): void {
    this.#records.setPolicy(this.id, policy);
    this.#policy = policy;
    this.#broker.setSessionPolicy(this.id, policy);
  }

  /** Saves a per-session preference (`null` removes the override); `reload` applies it. */
  prefer(extension: string, enabled: boolean | null): void {
    this.#preferences.setSession(this.id, extension, enabled);
  }

  // ── activation ──────────────────────────────────────────────────────────

  /** Everything the session could run: installed extensions and the built-ins. */
  #known(): Map<string, Known> {
    const known = new Map<string, Known>();
    for (const installed of this.#broker.registry.list()) {
      const m = installed.manifest;
      let notApproved: string | null = null;
      try {
        this.#broker.approved(m.name);
      } catch (err) {
        notApproved = (err as Error).message;
      }
      known.set(m.name, {
        name: m.name,
        builtin: false,
        priority: m.priority,
        requires: m.requires,
        tools: m.tool.map((t) => t.name),
        commands: m.command.map((c) => c.name),
        hooks: m.hook.map((h) => ({ event: h.event, onError: h.on_error ?? "note" })),
        installed,
        notApproved,
      });
    }
    known.set(BUILTIN_HOOKS_NAME, {
      name: BUILTIN_HOOKS_NAME,
      builtin: true,
      priority: BUILTIN_HOOKS_PRIORITY,
      requires: [],
      tools: [],
      commands: [],
      hooks: BUILTIN_HOOK_EVENTS.map((event) => ({ event, onError: "note" as const })),
      installed: null,
      notApproved: null,
    });
    return known;
  }

  #preference(k: Known): Preference {
    // The built-in command hooks are off unless an operator turns them on.
    return this.#preferences.effective(this.id, k.name, !k.builtin);
  }

  #wanted(k: Known): boolean {
    return this.#preference(k).enabled;
  }

  /** Why an extension is not wanted, by where the preference came from. */
  #unwantedReason(k: Known): string {
    switch (this.#preference(k).source) {
      case "session":
        return "disabled in this session";
      case "global":
        return `disabled by the global default; turn it on with: tether session enable ${k.name}`;
      case "default":
        return `off by default; enable it with: tether session enable ${k.name}`;
    }
  }

  /** Plans from `known`; with `only`, nothing outside it becomes active (a refresh adds nothing). */
  #plan(known: ReadonlyMap<string, Known>, failed: ReadonlyMap<string, string>, only?: ReadonlySet<string>): Plan {
    const candidates: Candidate[] = [...known.values()].map((k) => {
      const failure = failed.get(k.name);
      const wanted = this.#wanted(k);
      const allowed = only === undefined || only.has(k.name);
      const disabledReason = !wanted
        ? this.#unwantedReason(k)
        : (this.#applied.plan.inactive.get(k.name) ?? "not active yet; reload the session to activate it");
      return {
        name: k.name,
        requires: k.requires,
        priority: k.priority,
        tools: k.tools,
        commands: k.commands,
        enabled: wanted && allowed,
        disabledReason,
        notApproved: k.notApproved,
        ...(failure !== undefined ? { failed: failure } : {}),
      };
    });
    return planActivation(candidates);
  }

  /** Starts one planned extension; null when it is up, else why not. */
  async #start(k: Known): Promise<string | null> {
    if (k.builtin) {
      try {
        this.#builtin.load();
        return null;
      } catch (err) {
        return (err as Error).message;
      }
    }
    try {
      await this.#broker.activate(this.id, k.name);
      return null;
    } catch (err) {
      const code = err instanceof TetherError ? ` (${err.code})` : "";
      return `failed to start${code}: ${(err as Error).message}`;
    }
  }

  /**
   * Plans, boots what the plan needs and re-plans after each failure until the
   * plan stands. `running` are the extensions whose satellites are already up.
   */
  async #activate(running: ReadonlySet<string>): Promise<{ applied: Applied; started: string[] }> {
    const known = this.#known();
    const failed = new Map<string, string>();
    const up = new Set(running);
    const started: string[] = [];
    try {
      for (;;) {
        const plan = this.#plan(known, failed);
        const toStart = plan.active.filter((name) => !up.has(name));
        if (toStart.length === 0) {
          // Started, then dropped because something it requires failed later: stop it again.
          const extra = started.filter((name) => !plan.active.includes(name));
          await Promise.all(extra.map((name) => this.#broker.deactivate(this.id, name)));
          return { applied: { plan, known, failed }, started: started.filter((name) => plan.active.includes(name)) };
        }
        // Independent boots in parallel; the plan is re-made from their results.
        const results = await Promise.all(toStart.map(async (name) => [name, await this.#start(known.get(name)!)] as const));
        for (const [name, failure] of results) {
          if (failure === null) {
            up.add(name);
            started.push(name);
          } else {
            failed.set(name, failure);
          }
        }
      }
    } catch (err) {
      // Nothing half-applied: what this activation started is stopped again.
      await Promise.all(started.map((name) => this.#broker.deactivate(this.id, name).catch(() => {})));
      throw err;
    }
  }

  /** Notices lost approvals: the affected extensions and their dependents drop out; nothing is added. */
  #refresh(): void {
    if (this.#closed) throw new TetherError(BrokerCode.closed, `Session '${this.id}' is closed`);
    const epoch = this.#broker.approvalEpoch;
    if (epoch === this.#epoch) return;
    this.#epoch = epoch;
    const known = this.#known();
    const before = new Set(this.#applied.plan.active);
    const plan = this.#plan(known, this.#applied.failed, before);
    // Anything that was active and is not now: its status says why (the plan's reason); its satellite stops.
    const dropped = [...before].filter((name) => !plan.active.includes(name));
    this.#applied = { plan, known, failed: this.#applied.failed };
    for (const name of dropped) void this.#broker.deactivate(this.id, name).catch(() => {});
  }

  /**
   * Applies the saved preferences (and approvals) to the live session. The new
   * set is booted beside the old one and swapped in at once; satellites of
   * extensions that stay active keep running.
   */
  async reload(): Promise<ReloadReport> {
    this.#refresh();
    const before = new Set(this.#applied.plan.active);
    let result: { applied: Applied; started: string[] };
    try {
      result = await this.#activate(before);
    } catch (err) {
      throw new TetherError(BrokerCode.closed, `Reload of session '${this.id}' failed; the session is unchanged: ${(err as Error).message}`);
    }
    const { applied } = result;
    const after = new Set(applied.plan.active);
    const deactivated = [...before].filter((name) => !after.has(name));
    const activated = applied.plan.active.filter((name) => !before.has(name));
    this.#applied = applied;
    this.#epoch = this.#broker.approvalEpoch;
    await Promise.all(deactivated.map((name) => this.#broker.deactivate(this.id, name)));
    const failed = [...applied.failed].map(([name, reason]) => ({ name, reason }));
    return { activated, deactivated, failed };
  }

  /** Every extension the session knows of, active ones first in registry order, then the rest by name. */
  status(): ExtensionStatus[] {
    this.#refresh();
    const { plan, known } = this.#applied;
    const row = (k: Known, state: ExtensionState, reason: string | null): ExtensionStatus => ({
      name: k.name,
      state,
      reason,
      builtin: k.builtin,
      preference: this.#preference(k),
      priority: k.priority,
      requires: k.requires,
      tools: k.tools,
      commands: k.commands,
      hooks: k.hooks.map((h) => h.event),
    });
    const active = plan.active.map((name) => row(known.get(name)!, "active", null));
    const rest = [...known.values()]
      .filter((k) => !plan.active.includes(k.name))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((k) => {
        const wanted = this.#wanted(k);
        const reason = wanted ? (plan.inactive.get(k.name) ?? "not active") : this.#unwantedReason(k);
        const state: ExtensionState = wanted ? "inactive" : "disabled";
        const retry = wanted && this.#applied.failed.has(k.name) ? " (still wanted: the next reload retries it)" : "";
        return row(k, state, `${reason}${retry}`);
      });
    return [...active, ...rest];
  }

  /** The tools the model may call in this session, with the extension serving each. */
  tools(): { name: string; extension: string; description: string; parameters: Record<string, unknown> }[] {
    this.#refresh();
    const out: { name: string; extension: string; description: string; parameters: Record<string, unknown> }[] = [];
    for (const name of this.#applied.plan.active) {
      const k = this.#applied.known.get(name);
      for (const t of k?.installed?.manifest.tool ?? []) out.push({ name: t.name, extension: name, description: t.description, parameters: t.parameters });
    }
    return out;
  }

  /** The session's `/commands`, with the extension serving each. */
  commands(): { name: string; extension: string; description: string }[] {
    this.#refresh();
    const out: { name: string; extension: string; description: string }[] = [];
    for (const name of this.#applied.plan.active) {
      const k = this.#applied.known.get(name);
      for (const c of k?.installed?.manifest.command ?? []) out.push({ name: c.name, extension: name, description: c.description });
    }
    return out;
  }

  // ── the hook bus ────────────────────────────────────────────────────────

  /** Whether any active extension hooks `event` (a session without hooks pays nothing for the bus). */
  #hooked(event: EventName): boolean {
    for (const name of this.#applied.plan.active) {
      if (this.#applied.known.get(name)?.hooks.some((h) => h.event === event) === true) return true;
    }
    return false;
  }

  /** The bus hooks for one event: each active extension that declares it, in registry order. */
  #hooksFor(event: EventName, payload: Readonly<Record<string, unknown>>, except?: string): BusHook[] {
    const hooks: BusHook[] = [];
    for (const name of this.#applied.plan.active) {
      if (name === except) continue;
      const k = this.#applied.known.get(name)!;
      const row = k.hooks.find((h) => h.event === event);
      if (row === undefined) continue;
      if (k.builtin) {
        hooks.push(...this.#builtin.hooksFor(event, payload, { sessionId: this.id, workspace: this.workspace }));
        continue;
      }
      const payloadFor = (messages: readonly unknown[] | undefined) => (messages === undefined ? payload : { ...payload, messages });
      hooks.push(satelliteBusHook(this.#broker, this.id, name, event, row.onError, payloadFor));
    }
    return hooks;
  }

  /** Asks the hooks and composes their answers; `#traced` writes the verdicts to the ledger. */
  async #compose(
    event: EventName,
    payload: Readonly<Record<string, unknown>>,
    extra: { except?: string; validateArguments?: (args: unknown) => string | null } = {},
  ): Promise<Composed> {
    const hooks = this.#hooksFor(event, payload, extra.except);
    const messages = event === "context" ? (payload["messages"] as readonly unknown[]) : undefined;
    return compose(event, hooks, {
      ...(extra.validateArguments !== undefined ? { validateArguments: extra.validateArguments } : {}),
      ...(messages !== undefined ? { messages } : {}),
    });
  }

  /** Traces every hook's verdict about one event in the ledger. */
  #traced(event: EventName, composed: Composed, subject: string, about: number | null): Composed {
    this.#broker.ledger.trace(
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
  async fire<E extends HarnessEvent>(event: E, payload: HarnessPayload<E>): Promise<Composed> {
    this.#refresh();
    const full: unknown = event === "session_start" ? { session_id: this.id, workspace: this.workspace, ...payload } : payload;
    const checked = v.safeParse(EventPayloads[event], full);
    if (!checked.success) throw new TetherError(WireCode.badArguments, `event '${event}': ${describeIssues(checked.issues)}`);
    const data = checked.output as Record<string, unknown>;
    const composed = this.#traced(event, await this.#compose(event, data), "", null);
    if (event === "agent_end" && composed.block !== null && typeof data["held"] === "number" && data["held"] >= MAX_HELD) {
      // Hooks already kept this turn going MAX_HELD times: let it end.
      return { ...composed, block: null, notes: [...composed.notes, `${composed.block.by} asked to keep the turn going again; it was already held ${MAX_HELD} times, so the turn ends`] };
    }
    return composed;
  }

  /** The `cap_call` stage for this session's capability calls. */
  async #capCall(event: CapCallEvent): Promise<{ block: string; by: string } | null> {
    // Hooks' own capability calls are not asked about (a guard's kv.get must not ask the guard),
    // nor is the calling extension itself: its satellite is busy making this very call.
    if (this.#closed || event.within.startsWith("event:")) return null;
    // The judged request (normal forms, resolved addresses with their classes), never the raw spelling.
    const payload = { extension: event.extension, capability: event.capability, target: shownTarget(event.capability, event.target), within: event.within, ...(event.request !== undefined ? { request: event.request } : {}) };
    const composed = this.#traced("cap_call", await this.#compose("cap_call", payload, { except: event.extension }), `${event.capability} ${event.target}`.trim(), event.invocationId);
    return composed.block === null ? null : { block: composed.block.reason, by: composed.block.by };
  }

  /**
   * Calls a tool by name, with the hook bus around it: `tool_call` hooks may
   * block, halt, rewrite the arguments (re-validated against the tool's schema)
   * or answer a substitute result; `tool_result` hooks see the outcome and may
   * withhold it. Never rejects for an extension's faults.
   */
  async callTool(tool: string, args: string, options: Omit<CallOptions, "session"> & { callId?: string } = {}): Promise<ToolCallReport> {
    this.#refresh();
    const callId = options.callId ?? randomUUID();
    const extension = this.#applied.plan.tools.get(tool);
    const base = { callId, arguments: args, rewrittenBy: null, substitutedBy: null, blockedBy: null, halt: null, context: [], notes: [], trace: [] };
    if (extension === undefined) {
      return { ...base, outcome: this.#notServed("tool", tool, [...this.#applied.plan.tools.keys()]), extension: null, invocationId: null };
    }
    if (!this.#hooked("tool_call") && !this.#hooked("tool_result")) {
      // Nothing listens: the call as the broker makes it, with nothing composed around it.
      let invocationId: number | null = null;
      const outcome = await this.#broker.callTool(extension, tool, args, {
        ...options,
        session: this.id,
        onInvocation: (id) => {
          invocationId = id;
          options.onInvocation?.(id);
        },
      });
      return { ...base, outcome, extension, invocationId };
    }
    const row = this.#applied.known.get(extension)?.installed?.manifest.tool.find((t) => t.name === tool);
    let parsed: unknown;
    try {
      parsed = parseBoundedJson(args, CALLER_JSON_BOUNDS);
    } catch (err) {
      const what = err instanceof DocumentBoundsError ? `Arguments are ${err.message} (the bound for any JSON document)` : "Arguments are not JSON";
      return { ...base, extension, invocationId: null, outcome: { ok: false, error: { code: WireCode.badArguments, msg: `tool '${tool}': ${what}` } } };
    }
    const schemaKey = `${this.#applied.known.get(extension)?.installed?.manifestHash ?? ""}:${tool}`;
    const validateArguments = (rewrite: unknown): string | null => {
      const checked = this.#broker.toolArgs.check(schemaKey, row?.parameters ?? { type: "object" }, JSON.stringify(rewrite));
      return checked.ok ? null : checked.msg;
    };

    const ledger = this.#broker.ledger;
    // Traced once the call's ledger row exists, so the verdicts point at it.
    const before = await this.#compose("tool_call", { tool, call_id: callId, arguments: parsed }, { validateArguments });
    const context = [...before.context];
    const notes = [...before.notes];
    const trace = [...before.trace];
    const stopped = before.block ?? before.halt;
    if (stopped !== null) {
      // Neither ran: the ledger still shows the call, with who stopped it.
      const id = ledger.begin({ sessionId: this.id, extension, kind: "tool", name: tool, strand: options.strand ?? "" });
      ledger.finish(id, BrokerCode.blocked);
      this.#traced("tool_call", before, tool, id);
      const what = before.block !== null ? "Blocked" : "The turn was halted";
      return {
        ...base,
        extension,
        invocationId: id,
        outcome: { ok: false, error: { code: BrokerCode.blocked, msg: `${what} by '${stopped.by}': ${stopped.reason}` } },
        blockedBy: stopped.by,
        halt: before.halt,
        context,
        notes,
        trace,
      };
    }
    const finalArgs = before.rewrite !== null ? JSON.stringify(before.rewrite.arguments) : args;
    const startedMs = Date.now();
    let invocationId: number | null = null;
    let outcome: InvocationOutcome;
    if (before.result !== null) {
      invocationId = ledger.begin({ sessionId: this.id, extension, kind: "tool", name: tool, strand: options.strand ?? "" });
      ledger.finish(invocationId, "substituted");
      outcome = { ok: true, value: toolValueOf(before.result.value) };
    } else {
      outcome = await this.#broker.callTool(extension, tool, finalArgs, {
        ...options,
        session: this.id,
        onInvocation: (id) => {
          invocationId = id;
          options.onInvocation?.(id);
        },
      });
    }
    const finishedMs = Date.now();
    this.#traced("tool_call", before, tool, invocationId);

    const resultPayload = {
      tool,
      call_id: callId,
      arguments: JSON.parse(finalArgs) as unknown,
      ok: outcome.ok,
      result: outcome.ok ? outcome.value : outcome.error,
      started_ms: startedMs,
      finished_ms: finishedMs,
    };
    const after = this.#traced("tool_result", await this.#compose("tool_result", resultPayload), tool, invocationId);
    context.push(...after.context);
    notes.push(...after.notes);
    trace.push(...after.trace);
    if (after.block !== null) {
      outcome = { ok: false, error: { code: BrokerCode.blocked, msg: `The result was withheld by '${after.block.by}': ${after.block.reason}` } };
    }
    return {
      outcome,
      extension,
      callId,
      invocationId,
      arguments: finalArgs,
      rewrittenBy: before.rewrite?.by ?? null,
      substitutedBy: before.result?.by ?? null,
      blockedBy: after.block?.by ?? null,
      halt: after.halt,
      context,
      notes,
      trace,
    };
  }

  /**
   * `callTool` as an async iterator: each partial report, in order, then the
   * report. Leaving the loop early cancels the call (the satellite's
   * `ctx.signal` aborts and the call ends `cancelled`).
   */
  stream(tool: string, args: string, options: Omit<CallOptions, "session" | "onReport"> & { callId?: string } = {}): AsyncGenerator<Step<ToolCallReport>, void, undefined> {
    return streamed((onReport, signal) => this.callTool(tool, args, { ...options, onReport, signal }), options.signal);
  }

  /** Runs `/name args` (the leading slash optional). Never rejects for an extension's faults. */
  async runCommand(line: string, options: Omit<CallOptions, "session"> = {}): Promise<{ outcome: InvocationOutcome; extension: string | null }> {
    this.#refresh();
    const match = /^\/?([^\s/]+)(?:\s+([\s\S]*))?$/.exec(line.trim());
    if (match === null) {
      return { extension: null, outcome: { ok: false, error: { code: WireCode.badArguments, msg: `Not a command: '${line.slice(0, 64)}' (expected /name args)` } } };
    }
    const name = match[1]!;
    const extension = this.#applied.plan.commands.get(name);
    if (extension === undefined) return { extension: null, outcome: this.#notServed("command", name, [...this.#applied.plan.commands.keys()]) };
    const outcome = await this.#broker.runCommand(extension, name, match[2] ?? "", { ...options, session: this.id });
    return { extension, outcome };
  }

  /** The answer for a name no active extension serves: names the inactive one that would, and why. */
  #notServed(what: "tool" | "command", name: string, served: string[]): InvocationOutcome {
    for (const k of this.#applied.known.values()) {
      const has = what === "tool" ? k.tools.includes(name) : k.commands.includes(name);
      if (has && !this.#applied.plan.active.includes(k.name)) {
        const reason = this.#applied.plan.inactive.get(k.name) ?? "not active";
        return { ok: false, error: { code: BrokerCode.inactive, msg: `The ${what} '${what === "command" ? "/" : ""}${name}' belongs to '${k.name}', which is inactive in this session: ${reason}` } };
      }
    }
    const list = served.sort().map((n) => (what === "command" ? `/${n}` : n));
    return { ok: false, error: { code: WireCode.unknownTool, msg: `Unknown ${what} '${name}'; this session serves [${list.join(", ")}]` } };
  }

  /** Aborts now: open calls end `closed`, satellites are killed; no SessionEnd hooks. Safe twice. */
  async destroy(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#broker.closed) return;
    this.#broker.setSessionCapHooks(this.id, null);
    await Promise.all(this.#applied.plan.active.map((name) => this.#broker.deactivate(this.id, name, { abort: true })));
    this.#records.close(this.id);
  }

  /** Lets open calls finish, runs the SessionEnd command hooks, stops the session's satellites and marks it closed. Safe twice. */
  async close(reason = "other"): Promise<string[]> {
    if (this.#closed) return [];
    if (this.#broker.closed) {
      // The broker already stopped every satellite and closed the store.
      this.#closed = true;
      return [];
    }
    let notes: string[] = [];
    if (this.#applied.plan.active.includes(BUILTIN_HOOKS_NAME)) {
      notes = await this.#builtin.sessionEnd({ sessionId: this.id, workspace: this.workspace }, reason);
    }
    this.#closed = true;
    this.#broker.setSessionCapHooks(this.id, null);
    await Promise.all(this.#applied.plan.active.map((name) => this.#broker.deactivate(this.id, name)));
    this.#records.close(this.id);
    return notes;
  }
}

/**
 * What other extensions' `cap_call` hooks are shown of a target: a URL without
 * its credentials, fragment and query values (secrets travel there), so one
 * extension's request does not hand its secrets to another. The ledger keeps
 * the full target for the operator.
 */
export function shownTarget(capability: string, target: string): string {
  if (capability !== "net.fetch") return target;
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return target;
  }
  const keys = [...url.searchParams.keys()];
  const query = keys.length > 0 ? `?${keys.map((k) => `${encodeURIComponent(k)}=…`).join("&")}` : "";
  return `${url.protocol}//${url.host}${url.pathname}${query}`;
}

function emptyApplied(): Applied {
  return { plan: { active: [], inactive: new Map(), tools: new Map(), commands: new Map() }, known: new Map(), failed: new Map() };
}
