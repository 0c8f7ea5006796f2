/** The broker as a library: open it on a home folder, call approved extensions' tools, close it. It refuses anything an operator did not approve. */
import { capDispatcher, noHooks, type CapEnvironment } from "./caps/dispatcher.js";
import { OperatorPolicySource, type SessionPolicy } from "./caps/policy.js";
import { CapabilityWork } from "./caps/in-flight.js";
import { Permits } from "./caps/permits.js";
import { EgressAgents } from "./egress/agents.js";
import { systemResolver } from "./egress/system-resolver.js";
import { BrokerCode, TetherError, WireCode } from "./base/errors.js";
import { jailSetup, type JailSetup } from "./jail/setup.js";
import { createLogger, type Logger } from "./base/log.js";
import { ExtensionLogs, extensionLogDir, teeExtensionLogs } from "./base/extension-logs.js";
import { Registry, type Approval, type Installed } from "./registry/registry.js";
import type { InvocationOutcome } from "./base/outcome.js";
import { sweepStaleCgroups } from "./jail/cgroup.js";
import { jailIdentity, sweepSatelliteDirs } from "./jail/identity.js";
import { dataVersionReader } from "./store/data-version.js";
import { prepareHome, resolveHome } from "./store/home.js";
import { Ledger } from "./store/ledger.js";
import { openStore, type Store } from "./store/open.js";
import { ToolArgsChecker } from "./base/tool-args.js";
import { ParsedRules } from "./caps/parsed-rules.js";
import { DbProcesses } from "./store/db-processes.js";
import { FileSecrets } from "./secrets/store.js";
import { loginSecrets } from "./login/logins.js";
import {
  BROKER_FETCHES,
  DEFAULT_HOOK_DEADLINE_MS,
  EXTENSION_FETCHES,
  type BrokerOptions,
  type CallOptions,
  type SessionFleet,
} from "./broker-options.js";
import { approvalInForce, currentApproval, syncApprovals } from "./approval-sync.js";
import { gatedHost, Initializers, type InitReport } from "./init/initializers.js";
import { InvocationEnd } from "./caps/invocation-end.js";
import { SatelliteLauncher } from "./satellite-launcher.js";
import { SessionScope, type HookOutcome, type Live, type ScopeCallOptions, type ScopeHost } from "./session-scope.js";
import { sessionKindRule } from "./sessions/session-kind-rule.js";
import type { SessionKind } from "../jail-runtime/wire/session-kinds.js";
import type { CallKind } from "../jail-runtime/wire/frames.js";
import { complete, type CompletionOptions, type CompletionReport } from "./providers/completion.js";
import { providersFor, type ProvidersView } from "./providers/view.js";
import { kvRepository } from "./store/kv-repository.js";

export {
  BROKER_FETCHES,
  DEFAULT_HOOK_DEADLINE_MS,
  EXTENSION_FETCHES,
  type BrokerOptions,
  type CallOptions,
} from "./broker-options.js";
export type { HookOutcome } from "./session-scope.js";

export class Broker {
  readonly home: string;
  readonly store: Store;
  readonly registry: Registry;
  readonly ledger: Ledger;
  /** The fleet this broker is a host of, once it joined one (sessions lease from it). */
  fleet: SessionFleet | null = null;
  /** Checks tool arguments against their schemas (this broker's compiled schemas). */
  readonly toolArgs = new ToolArgsChecker();
  readonly #options: BrokerOptions;
  readonly #jail: JailSetup;
  readonly #launcher: SatelliteLauncher;
  /** The broker's log (what names an extension also goes to its own file): for sessions' notes too. */
  readonly log: Logger;
  /** One object per session id: its policy, its cap_call stage, its live satellites. */
  readonly #scopes = new Map<string, SessionScope>();
  readonly #host: ScopeHost;
  /** Initializers (`[init]`): every invocation of the host waits for its extension's. */
  readonly #inits: Initializers;
  readonly #caps: CapEnvironment;
  readonly #work = new CapabilityWork();
  readonly #agents = new EgressAgents();
  /** Fetches in flight in the whole broker: one socket each, at most. */
  readonly #brokerFetches = new Permits(BROKER_FETCHES, "broker:fetches");
  readonly #extensionFetches = new Map<string, Permits>();
  #dataVersion = -1;
  /** Prepared once: read on every call. */
  readonly #dataVersionQuery: () => number;
  #approvalEpoch = 0;
  #registryVersion = -1;
  /** The store's data_version was read in this synchronous stretch. */
  #versionChecked = false;
  #closed = false;

  private constructor(options: BrokerOptions) {
    this.#options = options;
    this.#jail = jailSetup(options);
    const paths = prepareHome(resolveHome(options.home));
    this.home = paths.home;
    const log = options.log ?? createLogger({ ...(options.logLevel !== undefined ? { level: options.logLevel } : {}) });
    // What is logged about an extension also goes to its own file (`tether logs <name>`).
    this.log =
      options.extensionLogs === false ? log : teeExtensionLogs(log, new ExtensionLogs(extensionLogDir(this.home)));
    this.store = openStore(paths.db);
    // Bundling, migrations and extensions' SQL run in host-side jails set up as the satellites' are.
    const jobs = { jail: this.#jail, ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}) };
    this.registry = new Registry(this.store, paths.artifacts, {
      jobs,
      ...(options.operator !== undefined ? { operator: options.operator } : {}),
    });
    this.ledger = new Ledger(this.store);
    this.#launcher = new SatelliteLauncher({
      home: this.home,
      jail: this.#jail,
      log: this.log,
      ledger: this.ledger,
      ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
      ...(options.bootTimeoutMs !== undefined ? { bootTimeoutMs: options.bootTimeoutMs } : {}),
      ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}),
      ...(options.ladderStepMs !== undefined ? { ladderStepMs: options.ladderStepMs } : {}),
      ...(options.denoCache !== undefined ? { denoCache: options.denoCache } : {}),
    });
    this.#dataVersionQuery = dataVersionReader(this.store);
    this.#caps = {
      home: this.home,
      store: this.store,
      ledger: this.ledger,
      log: this.log,
      operator: new OperatorPolicySource(this.home),
      resolve: options.resolve ?? systemResolver,
      hooks: async (event) => {
        // The library caller's stage first (tests, embedders), then the session's bus.
        const own = await (options.capHooks ?? noHooks)(event);
        if (own !== null) return own;
        return (this.#scopes.get(event.sessionId)?.capHooks ?? noHooks)(event);
      },
      work: this.#work,
      agents: this.#agents,
      rules: new ParsedRules(),
      dbs: new DbProcesses(this.home, jobs),
      kv: () => this.fleet?.kv ?? kvRepository(this.store),
      secrets: options.secrets ?? new FileSecrets(this.home),
      logins: loginSecrets(this),
      fetchBounds: (extension) => {
        let own = this.#extensionFetches.get(extension);
        if (own === undefined)
          this.#extensionFetches.set(extension, (own = new Permits(EXTENSION_FETCHES, "broker:fetches-per-extension")));
        return [own, this.#brokerFetches];
      },
    };
    this.#inits = new Initializers(this);
    this.#host = gatedHost(this.#inits, {
      boot: async (scope, extension) => {
        if (this.#closed) throw new TetherError(BrokerCode.closed, "The broker is closed");
        await this.#slot(scope, extension).slot.boot();
      },
      callTool: (scope, extension, tool, args, options) => this.#callTool(scope, extension, tool, args, options),
      runCommand: (scope, extension, name, argsText, options) =>
        this.#runCommand(scope, extension, name, argsText, options),
      callHook: (scope, extension, event, payload, options) =>
        this.#callHook(scope, extension, event, payload, options),
      invoke: (scope, extension, kind, name, payload, options) =>
        this.#invokeSessionKind(scope, extension, kind, name, payload, options),
      policyChanged: () => void this.#work.recheck(),
    });
  }

  /** The broker's object for session `id` (made on first use): what a `Session` claims, and the hookless path. */
  scope(id: string): SessionScope {
    let scope = this.#scopes.get(id);
    if (scope === undefined) this.#scopes.set(id, (scope = new SessionScope(id, this.#host)));
    return scope;
  }

  /** Whether `close()` or `destroy()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Moves whenever the broker stopped a satellite because its approval was revoked or its install changed; sessions re-plan when it moves. */
  get approvalEpoch(): number {
    this.#enforceApprovals();
    return this.#approvalEpoch;
  }

  /** Sets a session's policy (offline, a narrower allow list); the next capability call obeys it, and requests on the wire are judged again now. */
  setSessionPolicy(session: string, policy: SessionPolicy): void {
    this.scope(session).setPolicy(policy);
  }

  /** Judges every request on the wire again against the policies now (done by itself within a fraction of a second; call it to have it at once); those that fail are cut off. */
  recheckEgress(): Promise<void> {
    return this.#work.recheck();
  }

  /** The model providers served now (globally enabled extensions), ranked by `session`'s saved preference when given; the daemon scope (providers/). */
  providers(session?: string): ProvidersView {
    return providersFor(this, session);
  }

  /** A completion through a provider's daemon satellite (providers/completion.ts); its deltas to `options.onPartial`. Never rejects for a provider's faults. */
  complete(request: unknown, options: CompletionOptions = {}): Promise<CompletionReport> {
    return complete(this, request, options);
  }

  static open(options: BrokerOptions = {}): Broker {
    // What a broker killed with SIGKILL left behind: its cgroups (what runs in them is killed,
    // the folders removed) and its satellites' socket folders.
    const jail = jailSetup(options);
    void sweepStaleCgroups(jail.cgroup);
    sweepSatelliteDirs(jailIdentity(jail.identity));
    return new Broker(options);
  }

  /** The approval that lets `name` run now, or an error that names the command that fixes it. */
  approved(name: string): { installed: Installed; approval: Approval } {
    return approvalInForce(this.registry, name);
  }

  /** Runs `name`'s initializer (`[init]`) for the approval in force unless it already ran (init/initializers.ts); what came of it. */
  initialize(name: string, reason: "approved" | "start" = "approved"): Promise<InitReport> {
    return this.#inits.initialize(name, reason);
  }

  /** Stops satellites whose approval is gone or replaced (another process may have revoked it). */
  #enforceApprovals(): void {
    // data_version moves with other processes' commits; the registry's own counter with ours.
    // Once per synchronous stretch: a call asks here more than once before it first waits, and
    // nothing another process commits can be seen between those asks.
    if (this.#versionChecked && this.registry.version === this.#registryVersion) return;
    this.#versionChecked = true;
    queueMicrotask(() => (this.#versionChecked = false));
    const version = this.#dataVersionQuery();
    if (version === this.#dataVersion && this.registry.version === this.#registryVersion) return;
    this.#dataVersion = version;
    this.#registryVersion = this.registry.version;
    this.#approvalEpoch++;
    syncApprovals(this.registry, this.#scopes.values(), this.log);
  }

  #slot(scope: SessionScope, name: string): Live {
    this.#enforceApprovals();
    // A fleet's host serves nothing past its staleness bound, nor a session whose lease it lost.
    this.fleet?.admit(scope.id);
    const session = scope.id;
    const existing = scope.live.get(name);
    if (existing !== undefined) return existing;
    const { installed, approval } = this.approved(name);
    const slot = this.#launcher.pool(session, installed, approval, this.#caps.operator.current());
    const live = { slot, installed, approval };
    scope.live.set(name, live);
    return live;
  }

  /** Boots the satellite of `extension` for `session` now (activation does: a failed boot or a served/declared mismatch is known before anything is asked); rejects naming what failed. */
  activate(session: string, extension: string): Promise<void> {
    return this.scope(session).activate(extension);
  }

  /** Stops the satellite of `extension` in `session`: letting its open call finish, or with `abort`, now. */
  deactivate(session: string, extension: string, options: { abort?: boolean } = {}): Promise<void> {
    return this.scope(session).deactivate(extension, options);
  }

  /**
   * Calls one tool of an approved extension in `options.session`, **without the
   * hook bus** (a `Session`'s `callTool` puts it around the call): the path a
   * caller asks for by name. Never rejects for the extension's faults: they are answers.
   */
  callTool(extension: string, tool: string, args: string, options: CallOptions): Promise<InvocationOutcome<"tool">> {
    return this.scope(options.session).callTool(extension, tool, args, options);
  }

  async #callTool(
    scope: SessionScope,
    extension: string,
    tool: string,
    args: string,
    options: ScopeCallOptions,
  ): Promise<InvocationOutcome<"tool">> {
    if (this.#closed) throw new TetherError(BrokerCode.closed, "The broker is closed");
    const session = scope.id;
    const live = this.#slot(scope, extension);
    const { installed, approval } = live;
    const row = installed.manifest.tool.find((t) => t.name === tool);
    if (row === undefined || !approval.grants.tools.includes(tool)) {
      const served = [...approval.grants.tools].sort();
      return {
        ok: false,
        error: {
          code: WireCode.unknownTool,
          msg: `Unknown tool '${tool}'; '${extension}' serves [${served.join(", ")}]`,
        },
      };
    }
    const checked = this.toolArgs.check(`${installed.manifestHash}:${tool}`, row.parameters, args);
    if (!checked.ok) {
      // Refused before it reached the satellite; the ledger still shows it.
      const id = this.ledger.begin({
        sessionId: session,
        extension,
        kind: "tool",
        name: tool,
        strand: options.strand ?? "",
        hooksBypassed: options.hooksBypassed === true,
      });
      options.onInvocation?.(id);
      this.ledger.finish(id, WireCode.badArguments);
      return { ok: false, error: { code: WireCode.badArguments, msg: `tool '${tool}': ${checked.msg}` } };
    }
    const deadlineMs = Math.min(
      row.deadline_ms ?? approval.grants.limits.deadline_ms,
      approval.grants.limits.deadline_ms,
    );
    return (await this.#invoke(live, scope, "tool", tool, args, deadlineMs, options)).outcome;
  }

  /**
   * Runs a `[[command]]` of an approved extension: `/name args`, with the raw
   * argument text. Never rejects for the extension's faults.
   */
  runCommand(
    extension: string,
    name: string,
    argsText: string,
    options: CallOptions,
  ): Promise<InvocationOutcome<"command">> {
    return this.scope(options.session).runCommand(extension, name, argsText, options);
  }

  async #runCommand(
    scope: SessionScope,
    extension: string,
    name: string,
    argsText: string,
    options: ScopeCallOptions,
  ): Promise<InvocationOutcome<"command">> {
    if (this.#closed) throw new TetherError(BrokerCode.closed, "The broker is closed");
    const live = this.#slot(scope, extension);
    if (!live.installed.manifest.command.some((c) => c.name === name)) {
      const served = live.installed.manifest.command.map((c) => c.name).sort();
      return {
        ok: false,
        error: {
          code: WireCode.unknownTool,
          msg: `Unknown command '/${name}'; '${extension}' serves [${served.map((c) => `/${c}`).join(", ")}]`,
        },
      };
    }
    const limits = live.approval.grants.limits;
    return (await this.#invoke(live, scope, "command", name, argsText, limits.deadline_ms, options)).outcome;
  }

  /**
   * Asks one extension's hook about one event (`payload` is JSON text). The
   * hook's time limit is its row's `deadline_ms` (default 5 s, never more than
   * the extension's deadline), counted from when it is asked — waiting behind
   * the satellite's open call included.
   */
  callHook(extension: string, event: string, payload: string, options: CallOptions): Promise<HookOutcome> {
    return this.scope(options.session).callHook(extension, event, payload, options);
  }

  async #callHook(
    scope: SessionScope,
    extension: string,
    event: string,
    payload: string,
    options: ScopeCallOptions,
  ): Promise<HookOutcome> {
    if (this.#closed) throw new TetherError(BrokerCode.closed, "The broker is closed");
    const live = this.#slot(scope, extension);
    const row = live.installed.manifest.hook.find((h) => h.event === event);
    if (row === undefined || !live.approval.grants.hooks.includes(event)) {
      return {
        outcome: {
          ok: false,
          error: { code: WireCode.unhandled, msg: `'${extension}' has no approved hook for '${event}'` },
        },
        invocationId: null,
      };
    }
    const deadlineMs = Math.min(row.deadline_ms ?? DEFAULT_HOOK_DEADLINE_MS, live.approval.grants.limits.deadline_ms);
    return this.#timed(live, scope, "event", event, payload, deadlineMs, options, "The hook");
  }

  /** A session-facing kind (sessions/session-kind-rule.ts says whether, and for how long), timed as a hook is. */
  async #invokeSessionKind(
    scope: SessionScope,
    extension: string,
    kind: SessionKind,
    name: string,
    payload: string,
    options: ScopeCallOptions,
  ): Promise<HookOutcome<SessionKind>> {
    if (this.#closed) throw new TetherError(BrokerCode.closed, "The broker is closed");
    const live = this.#slot(scope, extension);
    const rule = sessionKindRule(extension, live.installed.manifest, live.approval.grants, kind, name);
    if ("ok" in rule) return { outcome: rule, invocationId: null };
    return this.#timed(
      live,
      scope,
      kind,
      name,
      payload,
      rule.deadlineMs,
      options,
      `${kind}${name === "" ? "" : ` '${name}'`}`,
    );
  }

  /** An invocation whose time limit covers the wait for the satellite too: one queued behind a long call is late (`timeout`). */
  async #timed<K extends "event" | SessionKind>(
    live: Live,
    scope: SessionScope,
    kind: K,
    name: string,
    payload: string,
    deadlineMs: number,
    options: ScopeCallOptions,
    what: string,
  ): Promise<HookOutcome<K>> {
    const late = AbortSignal.timeout(deadlineMs + (this.#options.graceMs ?? 500));
    const signal = options.signal === undefined ? late : AbortSignal.any([options.signal, late]);
    const result = await this.#invoke(live, scope, kind, name, payload, deadlineMs, { ...options, signal });
    if (!result.outcome.ok && result.outcome.error.code === WireCode.cancelled && late.aborted) {
      return {
        ...result,
        outcome: {
          ok: false,
          error: { code: WireCode.timeout, msg: `${what} passed its time limit of ${deadlineMs} ms` },
        },
      };
    }
    return result;
  }

  /** One invocation of a live satellite, with its ledger row and capability dispatcher. */
  async #invoke<K extends CallKind>(
    live: Live,
    scope: SessionScope,
    kind: K,
    name: string,
    args: string,
    deadlineMs: number,
    options: ScopeCallOptions,
  ): Promise<{ outcome: InvocationOutcome<K>; invocationId: number }> {
    const extension = live.slot.name;
    const session = scope.id;
    const strand = options.strand ?? "";
    const id = this.ledger.begin({
      sessionId: session,
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
    const dispatch = capDispatcher(this.#caps, {
      sessionId: session,
      invocationId: id,
      get signal() {
        return ended.signal;
      },
      deadlineAt: Date.now() + deadlineMs,
      grants: () => {
        // Read at dispatch (cheaply: the approvals are re-read only when the store changed):
        // a narrowed approval applies to the next capability call; a revoked one allows nothing.
        this.#enforceApprovals();
        const current = scope.live.get(extension);
        if (current !== undefined) return current.approval.grants;
        // No longer live: stopped by its session or the broker closing (its open call may finish
        // under the approval it has), or by a revocation or a changed install (nothing allowed).
        return currentApproval(this.registry, live.installed)?.grants ?? { ...live.approval.grants, net: [] };
      },
      session: () => scope.policy,
    });
    let outcome: InvocationOutcome<K>;
    try {
      outcome = await live.slot.invoke({ kind, name, args, strand, deadlineMs }, { ...options, dispatch });
    } catch (err) {
      this.ledger.finish(id, WireCode.crashed);
      throw err;
    } finally {
      ended.end();
    }
    this.ledger.finish(id, outcome.ok ? "ok" : outcome.error.code);
    return { outcome, invocationId: id };
  }

  /** Lets in-flight calls finish, stops every satellite, writes the ledger, closes the store. Safe twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#scopes.values()].map((scope) => scope.stopAll()));
    // Capability work still running (a body streaming after its invocation ended) writes its audit row first.
    await this.#work.settle();
    this.#caps.dbs.close();
    this.ledger.close();
    this.store.close();
    await this.#agents.close();
  }

  /** Aborts in-flight calls and kills every satellite now. Safe twice. */
  async destroy(): Promise<void> {
    const wasClosed = this.#closed;
    this.#closed = true;
    this.#work.abort("the broker was destroyed");
    await Promise.all([...this.#scopes.values()].map((scope) => scope.stopAll({ abort: true })));
    await this.#work.settle();
    this.#caps.dbs.close();
    await this.#agents.destroy();
    if (!wasClosed) {
      this.ledger.close();
      this.store.close();
    }
  }
}
