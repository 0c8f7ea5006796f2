/**
 * A session: which extensions are active for one workspace, and the hook bus
 * that asks them about what happens in it. A facade over three parts, each in
 * its own file — the active set (`active-set.ts`: plan, boot, refresh, reload,
 * status), the bus (`bus.ts`: which hooks, compose, trace, fire, `cap_call`)
 * and the hooked tool call (`hooked-call.ts`) — over the broker's scope for
 * this session (`broker/session-scope.ts`: policy, `cap_call` stage, live
 * satellites).
 */
import type { SessionHost } from "./session-host.js";
import type { SessionPolicy } from "../caps/policy.js";
import { BrokerCode, TetherError, WireCode } from "../base/errors.js";
import { BUILTIN_HOOKS_NAME, BuiltinHooks } from "../hooks/builtin-hooks.js";
import type { Composed } from "../hooks/compose.js";
import type { InvocationOutcome } from "../base/outcome.js";
import type { ScopeCallOptions, SessionScope } from "../kernel/session-scope.js";
import { ActiveSet, type ExtensionStatus, type ReloadReport, type SessionCommand } from "./active-set.js";
import type { ContextPiece } from "./context-loaders.js";
import { SessionBus, type HarnessEvent, type HarnessPayload } from "./bus.js";
import { hookedToolCall, type ToolCallReport } from "./hooked-call.js";
import { activeObservers, deliverThrough, Observers, type ObserverCounters } from "./observers.js";
import { chooseStrategy, compact, type CompactInput, type CompactReport, type Compacted } from "./compaction.js";
import { activeRows, type NamedRow } from "./named-rows.js";
import { routeCall, type RouteReport } from "./route-call.js";
import { FoldsRepository, type FoldRow } from "../store/folds-repository.js";
import { Preferences } from "./preferences.js";
import { SessionRecords } from "./session-records.js";
import type { CompletionOptions, CompletionReport } from "../providers/completion.js";
import { checkProviderPreference } from "../providers/ranking.js";
import type { ProvidersView } from "../providers/view.js";
import { providerPreferencesOf } from "../store/rank-preferences-repository.js";
import { streamed, type Step } from "./stream.js";
import { ModelRuns } from "./model-runs.js";
import { SessionSearchParts } from "./session-search.js";
import { ReportedActs } from "./reported-acts.js";
import { lostApprovalOutcome } from "./lost-approval.js";
import { planToolSchemas } from "./plan-tool-schemas.js";
import type { SearchReport } from "./search-call.js";
import type { SessionSearchProviders } from "./search-providers.js";

export { ActiveSet, type ExtensionState, type ExtensionStatus, type ReloadReport } from "./active-set.js";
export { MAX_SESSION_CONTEXT_BYTES } from "./composed-context.js";
export type { ContextPiece } from "./context-loaders.js";
export { MAX_HELD, shownTarget, type HarnessEvent, type HarnessPayload } from "./bus.js";
export type { ToolCallReport } from "./hooked-call.js";
export type { ObserverCounters } from "./observers.js";

/** A status row; an observer's also carries its delivery counters. */
export type SessionExtensionStatus = ExtensionStatus & { readonly observer?: ObserverCounters };
/** What `Session.onChange` tells: the active set was worked out again, or the session ends. */
export type SessionChange = "reloaded" | "closed";
export type { RouteReport } from "./route-call.js";
export type { CompactInput, CompactReport, Compacted } from "./compaction.js";
export type { NamedRow } from "./named-rows.js";
export type { FoldRow } from "../store/folds-repository.js";
export type { SearchReport } from "./search-call.js";
export type { SessionSearchProviders } from "./search-providers.js";

export interface SessionOptions {
  readonly id: string;
  /** The folder the session works in: command hooks run there. */
  readonly workspace: string;
  readonly policy?: SessionPolicy;
}

export class Session {
  readonly id: string;
  readonly workspace: string;
  readonly #broker: SessionHost;
  /** The broker's object for this session: policy, cap_call stage, live satellites. */
  readonly #scope: SessionScope;
  readonly #preferences: Preferences;
  readonly #records: SessionRecords;
  readonly #builtin: BuiltinHooks;
  readonly #active: ActiveSet;
  readonly #bus: SessionBus;
  readonly #observers: Observers;
  readonly #folds: FoldsRepository;
  readonly #search: SessionSearchParts;
  readonly #acts: ReportedActs;
  readonly #compacted = new Set<(data: Compacted) => void>();
  readonly #changed = new Set<(change: SessionChange) => void>();
  /** Its run state: `model.complete` is exclusive work (model-runs.ts). */
  readonly #models: ModelRuns;
  #toldClosed = false;

  private constructor(broker: SessionHost, scope: SessionScope, options: SessionOptions) {
    this.#broker = broker;
    this.#scope = scope;
    this.id = options.id;
    this.workspace = options.workspace;
    this.#preferences = new Preferences(broker.store);
    this.#records = new SessionRecords(broker.store);
    this.#builtin = new BuiltinHooks(broker.home);
    this.#active = new ActiveSet(broker, scope, this.#preferences, this.#builtin, options.workspace);
    this.#bus = new SessionBus(scope, options.workspace, broker.ledger, this.#active, this.#builtin);
    this.#models = new ModelRuns(this.id, (usage, chain) => this.#bus.fire("usage", usage, { chain }));
    this.#observers = new Observers(this.id, {
      subscribers: () => {
        // The active set as it stands: an approval lost since the last look leaves its observer out (as every
        // list the session answers notices first).
        if (!this.#active.closed) this.#active.refresh();
        const { plan, setups, known } = this.#active.applied;
        return activeObservers(
          plan.active.filter((name) => setups.get(name)?.observes !== false),
          known,
        );
      },
      deliver: deliverThrough(scope),
      log: broker.log,
    });
    this.#bus.observed = (event, data) => this.#observers.harnessEvent(event, data);
    // A compaction whose folds were stored: observers are told which strategy folded what.
    this.#compacted.add((data) => this.#observers.notify("compaction", { phase: "compacted", ...data }));
    this.#folds = new FoldsRepository(broker.store);
    this.#search = new SessionSearchParts(broker.store, scope, this.#active);
    this.#acts = new ReportedActs(this.#bus, this.#active, broker.toolArgs);
  }

  /**
   * Opens (or reopens) a session and activates its extensions: each installed,
   * approved extension that is wanted here (its global default, overridden per
   * session), booted whole or not at all.
   */
  static async open(broker: SessionHost, options: SessionOptions): Promise<Session> {
    const scope = broker.scope(options.id);
    if (scope.claimed) {
      throw new TetherError(
        BrokerCode.sessionInUse,
        `Session '${options.id}' is already open on this broker; close it first or use another id`,
      );
    }
    // In a fleet: leased to this host, and its state as the fleet last had it (a refusal names the holder).
    await broker.fleet?.openSession(options.id);
    if (scope.claimed)
      throw new TetherError(
        BrokerCode.sessionInUse,
        `Session '${options.id}' is already open on this broker; close it first or use another id`,
      );
    const records = new SessionRecords(broker.store);
    // A managed extension's preparation is told whether the session was open before.
    const resumed = records.get(options.id) !== null;
    const record = records.open(options.id, options.workspace, options.policy ?? {});
    scope.setPolicy(record.policy);
    const session = new Session(broker, scope, { ...options, id: record.id });
    // Claimed before the boots, so a second open of the id during them is refused too.
    scope.claim((event) => session.#bus.capCall(event));
    scope.models = session.#models;
    scope.searcher = session.#search.forCapability();
    scope.acts = session.#acts;
    try {
      const activating = session.#active.activate(new Set(), resumed);
      // While the satellites boot (started just above): Ajv loads and compiles the schemas of the tools the
      // session will serve, which each tool's first call would otherwise compile.
      const pending = session.#active.pending;
      broker.toolArgs.precompile(pending === null ? [] : planToolSchemas(pending), activating);
      session.#active.apply((await activating).applied);
    } catch (err) {
      scope.release();
      scope.models = null;
      await broker.fleet?.closeSession(options.id).catch(() => {});
      throw err;
    }
    session.#observers.notify("session", {
      change: "activation",
      activated: [...session.#active.applied.plan.active],
      deactivated: [],
    });
    return session;
  }

  get policy(): SessionPolicy {
    return this.#scope.policy;
  }

  /** Narrows (or widens back to the approvals) what this session's capability calls may do. */
  setPolicy(policy: SessionPolicy): void {
    this.#records.setPolicy(this.id, policy);
    this.#scope.setPolicy(policy);
  }

  /** Saves a per-session preference (`null` removes the override); `reload` applies it. */
  prefer(extension: string, enabled: boolean | null): void {
    this.#preferences.setSession(this.id, extension, enabled);
    this.#observers.notify("session", { change: "preference", extension, enabled });
  }

  /**
   * Applies the saved preferences (and approvals) to the live session. The new
   * set is booted beside the old one and swapped in at once; satellites of
   * extensions that stay active keep running.
   */
  async reload(): Promise<ReloadReport> {
    const report = await this.#active.reload();
    this.#observers.notify("session", {
      change: "activation",
      activated: [...report.activated],
      deactivated: [...report.deactivated],
      failed: report.failed.map((f) => f.name),
    });
    this.#tell("reloaded");
    return report;
  }

  /**
   * Tells `listener` when the session's active set was worked out again
   * (`reloaded`: its tools, commands and context may differ) and when it ends
   * (`closed`: once a close has let its open calls finish, or as a destroy
   * begins); returns how to stop.
   */
  onChange(listener: (change: SessionChange) => void): () => void {
    this.#changed.add(listener);
    return () => this.#changed.delete(listener);
  }

  #tell(change: SessionChange): void {
    if (this.#toldClosed) return;
    if (change === "closed") this.#toldClosed = true;
    for (const listener of [...this.#changed]) {
      try {
        listener(change);
      } catch {
        // One listener's trouble reaches neither the others nor the session.
      }
    }
  }

  /** Every extension the session knows of, active ones first in registry order, then the rest by name. */
  status(): SessionExtensionStatus[] {
    return this.#active.status().map((row) => {
      const observer = row.state === "active" ? this.#observers.counters(row.name) : null;
      return observer === null ? row : { ...row, observer };
    });
  }

  /**
   * The session's observers: `notify(kind, data)` for events the session does
   * not fire itself (a compaction), `setEnabled` to turn one off here, `idle()`
   * to wait until everything queued was handed over.
   */
  get observers(): Observers {
    return this.#observers;
  }

  /**
   * The session's composed context: each active extension's context loaders'
   * texts (`context:<name>`), then its preparation's instructions and context
   * (`prepare`), in registry order, at most `MAX_SESSION_CONTEXT_BYTES` in all
   * (a piece past the bound is left out whole; its status row says so).
   */
  context(): ContextPiece[] {
    return this.#active.context();
  }

  /**
   * Grows whenever the session's active set is worked out again (a reload;
   * an approval or install change, noticed at this read as at any other):
   * `tools()`, `commands()`, `context()` and `routes()` answer as they did
   * while it stands. What lists them for a client compares it, not the lists.
   */
  revision(): number {
    return this.#active.revision();
  }

  /** The tools the model may call in this session, with the extension serving each. */
  tools(): { name: string; extension: string; description: string; parameters: Record<string, unknown> }[] {
    return this.#active.tools();
  }

  /** The session's `/commands`, with the extension serving each. */
  commands(): SessionCommand[] {
    return this.#active.commands();
  }

  /**
   * Fires an event the harness owns (everything but tool_call, tool_result and
   * cap_call, which the session and the broker fire themselves). The payload is
   * checked against the event's schema first.
   */
  fire<E extends HarnessEvent>(event: E, payload: HarnessPayload<E>): Promise<Composed> {
    return this.#models.fired(event, () => this.#bus.fire(event, payload));
  }

  /**
   * Calls a tool by name, with the hook bus around it (`hooked-call.ts`).
   * Never rejects for an extension's faults.
   */
  callTool(tool: string, args: string, options: ScopeCallOptions & { callId?: string } = {}): Promise<ToolCallReport> {
    return hookedToolCall(
      {
        scope: this.#scope,
        active: this.#active,
        bus: this.#bus,
        ledger: this.#broker.ledger,
        toolArgs: this.#broker.toolArgs,
        acts: this.#acts,
      },
      tool,
      args,
      options,
    );
  }

  /**
   * `callTool` as an async iterator: each partial report, in order, then the
   * report. Leaving the loop early cancels the call (the satellite's
   * `ctx.signal` aborts and the call ends `cancelled`).
   */
  stream(
    tool: string,
    args: string,
    options: Omit<ScopeCallOptions, "onReport"> & { callId?: string } = {},
  ): AsyncGenerator<Step<ToolCallReport>, void, undefined> {
    return streamed((onReport, signal) => this.callTool(tool, args, { ...options, onReport, signal }), options.signal);
  }

  /** Runs `/name args` (the leading slash optional). Never rejects for an extension's faults. */
  async runCommand(
    line: string,
    options: ScopeCallOptions = {},
  ): Promise<{ outcome: InvocationOutcome<"command">; extension: string | null }> {
    this.#active.refresh();
    const match = /^\/?([^\s/]+)(?:\s+([\s\S]*))?$/.exec(line.trim());
    if (match === null) {
      return {
        extension: null,
        outcome: {
          ok: false,
          error: { code: WireCode.badArguments, msg: `Not a command: '${line.slice(0, 64)}' (expected /name args)` },
        },
      };
    }
    const name = match[1]!;
    const { plan } = this.#active.applied;
    const extension = plan.commands.get(name);
    if (extension === undefined)
      return { extension: null, outcome: this.#active.notServed("command", name, [...plan.commands.keys()]) };
    let outcome: InvocationOutcome<"command">;
    try {
      outcome = await this.#scope.runCommand(extension, name, match[2] ?? "", options);
    } catch (err) {
      outcome = lostApprovalOutcome(err);
    }
    return { extension, outcome };
  }

  /** The host routes the harness may call here, in registry order (`route`). */
  routes(): NamedRow[] {
    this.#active.refresh();
    return activeRows(this.#active, "route");
  }

  /**
   * Calls a host route of an active extension with a request string, in this
   * session's context, `route_call` hooks first (`route-call.ts`). Never
   * rejects for an extension's faults.
   */
  route(extension: string, name: string, request: string, options: ScopeCallOptions = {}): Promise<RouteReport> {
    return routeCall(
      {
        scope: this.#scope,
        active: this.#active,
        bus: this.#bus,
        ledger: this.#broker.ledger,
        workspace: this.workspace,
        search: () => this.#search.forRoutes(),
      },
      extension,
      name,
      request,
      options,
    );
  }

  /**
   * The compaction strategies active here, in registry order; the one `compact` would use now; the
   * saved preference.
   */
  strategies(): { strategies: NamedRow[]; current: string | null; preferred: string | null } {
    this.#active.refresh();
    const chosen = chooseStrategy({ scope: this.#scope, active: this.#active, folds: this.#folds });
    return {
      strategies: activeRows(this.#active, "compaction"),
      current: "ok" in chosen ? null : chosen.row.name,
      preferred: this.#folds.preferredStrategy(this.id),
    };
  }

  /** Saves the compaction strategy this session prefers (by name); `null` goes back to the first active one. */
  preferStrategy(name: string | null): void {
    if (name !== null && !/^[a-z][a-z0-9_-]{0,63}$/.test(name)) {
      throw new TetherError(
        WireCode.badArguments,
        `'${name.slice(0, 64)}' is not a strategy's name (a-z, 0-9, _ and -, at most 64, starting with a letter)`,
      );
    }
    this.#folds.setPreferredStrategy(this.id, name);
  }

  /**
   * Compacts the conversation (`compaction.ts`): `before_compact` hooks, then
   * the strategy; its folds are stored only when its whole answer fits.
   * Never rejects for an extension's faults.
   */
  compact(input: CompactInput, options: ScopeCallOptions = {}): Promise<CompactReport> {
    const onCompacted = (data: Compacted) => {
      for (const listener of this.#compacted) {
        try {
          listener(data);
        } catch {
          // One listener's trouble reaches neither the others nor the compaction.
        }
      }
    };
    return compact(
      { scope: this.#scope, active: this.#active, bus: this.#bus, folds: this.#folds, onCompacted },
      input,
      options,
    );
  }

  /**
   * Saves how this session ranks and excludes model providers (`rank`: names
   * to try first, in order; `exclude`: never these); `null` removes it. It
   * orders what is served globally and enables nothing (docs/providers.md).
   */
  preferProviders(preference: { rank?: readonly string[]; exclude?: readonly string[] } | null): void {
    providerPreferencesOf(this.#broker.store).set(
      this.id,
      preference === null ? null : checkProviderPreference(preference),
    );
  }

  /** The providers served now, as this session ranks them (`Broker.providers(id)`). */
  providers(): ProvidersView {
    return this.#broker.providers(this.id);
  }

  /** A completion for this session: its ranking picks the provider when none is named (`Broker.complete`). */
  complete(request: unknown, options: Omit<CompletionOptions, "session"> = {}): Promise<CompletionReport> {
    return this.#broker.complete(request, { ...options, session: this.id });
  }

  /**
   * Saves how this session ranks and excludes search providers (`rank`: names to ask first, in
   * order; `exclude`: never these); `null` removes it. It orders its active extensions' providers
   * and enables nothing (docs/search.md).
   */
  preferSearch(preference: { rank?: readonly string[]; exclude?: readonly string[] } | null): void {
    this.#search.prefer(preference);
  }

  /** The search providers of the extensions active here, as this session's preference ranks them. */
  searchProviders(): SessionSearchProviders {
    this.#active.refresh();
    return this.#search.providers();
  }

  /**
   * Asks every search provider of this session (`search-call.ts`) and merges their results
   * round-robin in rank order. Throws `bad_arguments` for a query or options that do not fit; never
   * rejects for an extension's fault (a provider that fails is a note).
   */
  search(query: string, options: { limit?: number } = {}, call: { signal?: AbortSignal } = {}): Promise<SearchReport> {
    this.#active.refresh();
    return this.#search.search(query, options, call);
  }

  /** Tells `listener` of each compaction whose folds were stored here; returns how to stop. */
  onCompacted(listener: (data: Compacted) => void): () => void {
    this.#compacted.add(listener);
    return () => this.#compacted.delete(listener);
  }

  /** The folds stored for this session, oldest compaction first; or one compaction's. */
  folds(compactionId?: number): FoldRow[] {
    return this.#folds.list(this.id, compactionId);
  }

  #endModels(): void {
    this.#models.close();
    if (this.#scope.models === this.#models) this.#scope.models = null;
  }

  /** Aborts now: open calls end `closed`, satellites are killed; no SessionEnd hooks. Safe twice. */
  async destroy(): Promise<void> {
    if (this.#active.closed) return;
    this.#active.closed = true;
    this.#endModels();
    this.#tell("closed");
    this.#observers.destroy();
    if (this.#broker.closed) return;
    this.#scope.release((event) => this.#bus.unaskable(event));
    // Aborting: no close is asked of managed extensions.
    await this.#active.letGoAll("session_closed", { abort: true });
    this.#records.close(this.id);
    await this.#broker.fleet?.closeSession(this.id);
  }

  /**
   * Lets open calls finish, runs the SessionEnd command hooks, closes managed
   * extensions, stops the session's satellites and marks it closed. Returns
   * the hooks' notes and any failed close. Safe twice.
   */
  async close(reason = "other"): Promise<string[]> {
    if (this.#active.closed) return [];
    // No model call from here on; the one in flight is aborted (model-runs.ts).
    this.#models.close();
    if (this.#broker.closed) {
      // The broker already stopped every satellite and closed the store.
      this.#active.closed = true;
      this.#tell("closed");
      this.#observers.destroy();
      return [];
    }
    let notes: string[] = [];
    if (this.#active.applied.plan.active.includes(BUILTIN_HOOKS_NAME)) {
      notes = await this.#builtin.sessionEnd({ sessionId: this.id, workspace: this.workspace }, reason);
    }
    // Observers are told the session ends, and get what is queued within a short deadline.
    this.#observers.notify("session", { change: "closing", reason });
    await this.#observers.close();
    this.#active.closed = true;
    this.#scope.release((event) => this.#bus.unaskable(event));
    // Managed extensions are closed (`session_closed`) before their satellites stop; a failed close is a note.
    await this.#active.letGoAll("session_closed");
    this.#records.close(this.id);
    await this.#broker.fleet?.closeSession(this.id);
    if (this.#scope.models === this.#models) this.#scope.models = null;
    this.#tell("closed");
    return [...notes, ...this.#active.takeNotes()];
  }
}
