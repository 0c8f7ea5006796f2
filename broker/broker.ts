/**
 * The broker as a library: open it on a home folder, call approved extensions'
 * tools, close it. It refuses anything an operator did not approve.
 *
 * This file is the composition root: it builds the kernel (kernel/kernel.ts)
 * from the home's store, registry, ledger, jail and capability environment,
 * registers the features with it (initializers, sign-ins, providers, the
 * fleet when one is joined), and keeps the library's API over them.
 */
import type { SessionKind } from "../jail-runtime/wire/session-kinds.js";
import { ExtensionLogs, extensionLogDir, teeExtensionLogs } from "./base/extension-logs.js";
import { createLogger, type Logger } from "./base/log.js";
import type { InvocationOutcome } from "./base/outcome.js";
import { ToolArgsChecker } from "./base/tool-args.js";
import {
  BROKER_FETCHES,
  type BrokerOptions,
  type CallOptions,
  EXTENSION_FETCHES,
  type SessionFleet,
} from "./broker-options.js";
import { type CapEnvironment, noHooks } from "./caps/dispatcher.js";
import { ParsedRules } from "./caps/parsed-rules.js";
import { CapabilityWork } from "./caps/in-flight.js";
import { Permits } from "./caps/permits.js";
import { OperatorPolicySource, type SessionPolicy } from "./caps/policy.js";
import { EgressAgents } from "./egress/agents.js";
import { systemResolver } from "./egress/system-resolver.js";
import { type InitReport, Initializers, initGate } from "./init/initializers.js";
import { sweepStaleCgroups } from "./jail/cgroup.js";
import { jailIdentity, sweepSatelliteDirs } from "./jail/identity.js";
import { jailSetup } from "./jail/setup.js";
import type { Interceptor } from "./kernel/interceptor.js";
import { Kernel } from "./kernel/kernel.js";
import { builtinKinds, kindDefinitions, kindSections, kindTable } from "./kernel/kinds.js";
import type { ApprovalChanges } from "./kernel/approval-changes.js";
import type { CloseHook } from "./kernel/host.js";
import { type CallResult, DAEMON_SCOPE, type HookOutcome, type SessionScope } from "./kernel/session-scope.js";
import { loginSecrets } from "./login/logins.js";
import { type CompletionOptions, type CompletionReport, complete } from "./providers/completion.js";
import { type ProvidersView, providersFor } from "./providers/view.js";
import { modelPort } from "./providers/model-call.js";
import { type Approval, type Installed, Registry } from "./registry/registry.js";
import { SatelliteLauncher } from "./satellite-launcher.js";
import { FileSecrets } from "./secrets/store.js";
import { dataVersionReader } from "./store/data-version.js";
import { registryStateReader } from "./store/registry-state.js";
import { DbProcesses } from "./store/db-processes.js";
import { prepareHome, resolveHome } from "./store/home.js";
import { kvRepository } from "./store/kv-repository.js";
import { Ledger } from "./store/ledger.js";
import { openStore, type Store } from "./store/open.js";

export {
  BROKER_FETCHES,
  DEFAULT_HOOK_DEADLINE_MS,
  EXTENSION_FETCHES,
  type BrokerOptions,
  type CallOptions,
} from "./broker-options.js";
export type { HookOutcome } from "./kernel/session-scope.js";

export class Broker {
  readonly home: string;
  readonly store: Store;
  readonly registry: Registry;
  readonly ledger: Ledger;
  /** Checks tool arguments against their schemas (this broker's compiled schemas). */
  readonly toolArgs = new ToolArgsChecker();
  /** The broker's log (what names an extension also goes to its own file): for sessions' notes too. */
  readonly log: Logger;
  readonly #kernel: Kernel;
  /** Initializers (`[init]`): every invocation waits for its extension's (an interceptor of the kernel). */
  readonly #inits: Initializers;
  readonly #work = new CapabilityWork();
  #fleet: SessionFleet | null = null;

  private constructor(options: BrokerOptions) {
    const jail = jailSetup(options);
    const paths = prepareHome(resolveHome(options.home));
    this.home = paths.home;
    const log = options.log ?? createLogger({ ...(options.logLevel !== undefined ? { level: options.logLevel } : {}) });
    // What is logged about an extension also goes to its own file (`tether logs <name>`).
    this.log =
      options.extensionLogs === false ? log : teeExtensionLogs(log, new ExtensionLogs(extensionLogDir(this.home)));
    this.store = openStore(paths.db);
    // Bundling, migrations and extensions' SQL run in host-side jails set up as the satellites' are.
    const jobs = {
      jail,
      ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
      ...(options.bundleCache !== undefined ? { bundleCache: options.bundleCache } : {}),
    };
    // The kinds table first: an added kind that takes a taken name fails the open before anything starts.
    const kinds = kindTable(builtinKinds(this.toolArgs), options.kinds);
    this.registry = new Registry(this.store, paths.artifacts, {
      jobs,
      sections: kindSections(options.kinds),
      ...(options.operator !== undefined ? { operator: options.operator } : {}),
    });
    this.ledger = new Ledger(this.store);
    const launcher = new SatelliteLauncher({
      home: this.home,
      jail,
      log: this.log,
      ledger: this.ledger,
      kinds: kindDefinitions(options.kinds),
      ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
      ...(options.bootTimeoutMs !== undefined ? { bootTimeoutMs: options.bootTimeoutMs } : {}),
      ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}),
      ...(options.ladderStepMs !== undefined ? { ladderStepMs: options.ladderStepMs } : {}),
      ...(options.denoCache !== undefined ? { denoCache: options.denoCache } : {}),
    });
    const caps = this.#capEnvironment(options, jobs);
    this.#kernel = new Kernel({
      home: this.home,
      store: this.store,
      registry: this.registry,
      ledger: this.ledger,
      log: this.log,
      caps,
      kinds,
      storeReads: { dataVersion: dataVersionReader(this.store), registryState: registryStateReader(this.store) },
      launch: (session, installed, approval) => launcher.pool(session, installed, approval, caps.operator.current()),
      graceMs: options.graceMs ?? 500,
    });
    // Close hooks run last registered first: capability work settles, then databases, pools, ledger and store.
    this.#kernel.onClose(async ({ abort, again }) => {
      if (abort) await caps.agents.destroy();
      if (!again) {
        this.ledger.close();
        this.store.close();
      }
      if (!abort) await caps.agents.close();
    });
    this.#kernel.onClose(() => caps.dbs.close());
    // Capability work still running (a body streaming after its invocation ended) writes its audit row first.
    this.#kernel.onClose(() => this.#work.settle());
    this.#inits = new Initializers(this.#kernel);
    this.#kernel.intercept(initGate(this.#inits));
  }

  /** What capability calls are served with: the home, the policies, egress, storage, secrets and sign-ins. */
  #capEnvironment(options: BrokerOptions, jobs: ConstructorParameters<typeof DbProcesses>[1]): CapEnvironment {
    const brokerFetches = new Permits(BROKER_FETCHES, "broker:fetches");
    const extensionFetches = new Map<string, Permits>();
    return {
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
        return this.scope(event.sessionId).capHooks(event);
      },
      work: this.#work,
      agents: new EgressAgents(),
      rules: new ParsedRules(),
      dbs: new DbProcesses(this.home, jobs),
      kv: () => this.#fleet?.kv ?? kvRepository(this.store),
      secrets: options.secrets ?? new FileSecrets(this.home),
      logins: loginSecrets(this),
      // A session's search: the scope's, once a session holds it (sessions/search-call.ts).
      search: (sessionId) => this.scope(sessionId).searcher,
      // A session's hooks as reported acts ask them, once a session holds the scope (sessions/reported-acts.ts).
      acts: (sessionId) => {
        const scope = this.scope(sessionId);
        if (scope.acts !== null) return scope.acts;
        if (sessionId === DAEMON_SCOPE)
          return { unguarded: "the daemon scope (a provider, a service, an initializer) has no session's hooks" };
        if (scope.released) return { unguarded: `session '${sessionId}' is closing: its hooks can no longer be asked` };
        return null;
      },
      // Extensions' own model calls (model.complete): the completion bridge, the sessions' run state.
      models: modelPort(this),
      fetchBounds: (extension) => {
        let own = extensionFetches.get(extension);
        if (own === undefined)
          extensionFetches.set(extension, (own = new Permits(EXTENSION_FETCHES, "broker:fetches-per-extension")));
        return [own, brokerFetches];
      },
    };
  }

  static open(options: BrokerOptions = {}): Broker {
    // What a broker killed with SIGKILL left behind: its cgroups (what runs in them is killed,
    // the folders removed) and its satellites' socket folders.
    const jail = jailSetup(options);
    void sweepStaleCgroups(jail.cgroup);
    sweepSatelliteDirs(jailIdentity(jail.identity));
    return new Broker(options);
  }

  /** The approvals in force, with an event after every change (kernel/approval-changes.ts). */
  get approvals(): ApprovalChanges {
    return this.#kernel.approvals;
  }

  /** Moves whenever an approval or an install changed (told by event; reading it does nothing). */
  get approvalEpoch(): number {
    return this.#kernel.approvals.epoch;
  }

  /** The fleet this broker is a host of, once it joined one (sessions lease from it). */
  get fleet(): SessionFleet | null {
    return this.#fleet;
  }

  /** Makes `fleet` this broker's (broker/fleet.ts, when it joins); returns its release. */
  useFleet(fleet: SessionFleet): () => void {
    this.#fleet = fleet;
    return () => {
      if (this.#fleet === fleet) this.#fleet = null;
    };
  }

  /** Whether `close()` or `destroy()` was called. */
  get closed(): boolean {
    return this.#kernel.closed;
  }

  /** The broker's object for session `id` (made on first use): what a `Session` claims, and the hookless path. */
  scope(id: string): SessionScope {
    return this.#kernel.scope(id);
  }

  /** Puts `interceptor` around every invocation from now on (kernel/interceptor.ts); returns its removal. */
  intercept(interceptor: Interceptor): () => void {
    return this.#kernel.intercept(interceptor);
  }

  /** Runs `hook` when the broker closes, after its satellites stopped, before its store closes. */
  onClose(hook: CloseHook): void {
    this.#kernel.onClose(hook);
  }

  /** The approval that lets `name` run now, or an error that names the command that fixes it. */
  approved(name: string): { installed: Installed; approval: Approval } {
    return this.#kernel.approved(name);
  }

  /**
   * Runs `name`'s initializer (`[init]`) for the approval in force
   * unless it already ran (init/initializers.ts); what came of it.
   */
  initialize(name: string, reason: "approved" | "start" = "approved"): Promise<InitReport> {
    return this.#inits.initialize(name, reason);
  }

  /**
   * Sets a session's policy (offline, a narrower allow list); the next
   * capability call obeys it, and requests on the wire are judged again now.
   */
  setSessionPolicy(session: string, policy: SessionPolicy): void {
    this.scope(session).setPolicy(policy);
  }

  /**
   * Judges every request on the wire again against the policies now (done by itself within
   * a fraction of a second; call it to have it at once); those that fail are cut off.
   */
  recheckEgress(): Promise<void> {
    return this.#work.recheck();
  }

  /**
   * The model providers served now (globally enabled extensions), ranked by
   * `session`'s saved preference when given; the daemon scope (providers/).
   */
  providers(session?: string): ProvidersView {
    return providersFor(this, session);
  }

  /**
   * A completion through a provider's daemon satellite (providers/completion.ts);
   * its deltas to `options.onPartial`. Never rejects for a provider's faults.
   */
  complete(request: unknown, options: CompletionOptions = {}): Promise<CompletionReport> {
    return complete(this, request, options);
  }

  /**
   * Boots the satellite of `extension` for `session` now (activation does: a failed boot or a
   * served/declared mismatch is known before anything is asked); rejects naming what failed.
   */
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

  /**
   * Runs a `[[command]]` of an approved extension: `/name args`, with
   * the raw argument text. Never rejects for the extension's faults.
   */
  runCommand(
    extension: string,
    name: string,
    argsText: string,
    options: CallOptions,
  ): Promise<InvocationOutcome<"command">> {
    return this.scope(options.session).runCommand(extension, name, argsText, options);
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

  /**
   * Asks one extension an invocation of a session-facing kind, or of a kind added
   * with `options.kinds` (its answer: JSON text its schema accepted), in
   * `options.session` (the kernel's `invoke`).
   */
  invoke<K extends SessionKind | (string & {})>(
    extension: string,
    kind: K,
    name: string,
    payload: string,
    options: CallOptions,
  ): Promise<CallResult<K>> {
    return this.scope(options.session).invoke(extension, kind, name, payload, options);
  }

  /** Lets in-flight calls finish, stops every satellite, writes the ledger, closes the store. Safe twice. */
  close(): Promise<void> {
    return this.#kernel.close();
  }

  /** Aborts in-flight calls and kills every satellite now. Safe twice. */
  destroy(): Promise<void> {
    this.#work.abort("the broker was destroyed");
    return this.#kernel.destroy();
  }
}
