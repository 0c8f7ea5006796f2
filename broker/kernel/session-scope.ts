/**
 * What one session is to the broker: its policy, its `cap_call` stage and its
 * live satellites, in one object the broker hands out (`Broker.scope(id)`).
 * A `Session` claims its scope and puts the hook bus around it; a scope used
 * without a session is the hookless path a caller asks for by name
 * (`Broker.callTool`, `tether call --no-hooks`).
 */
import type { WaitChain } from "../base/waits.js";
import { noHooks, type CapHookStage } from "../caps/context.js";
import type { SessionPolicy } from "../caps/policy.js";
import { BrokerCode, TetherError } from "../base/errors.js";
import type { Approval, Installed } from "../registry/registry.js";
import type { InvocationOutcome } from "../base/outcome.js";
import type { SatellitePool } from "../satellite/pool.js";
import type { InvokeOptions } from "../base/invocation.js";
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";
import type { SessionKind } from "../../jail-runtime/wire/session-kinds.js";
import type { SessionSearch } from "../base/search-port.js";
import type { SessionActs } from "../base/act-port.js";
import type { SessionModels } from "../base/model-port.js";

/**
 * The daemon scope's id: where satellites that serve the broker as a whole run
 * (providers, services, initializers). No session can take it: `@` fails the
 * session id's pattern.
 */
export const DAEMON_SCOPE = "@daemon";

/** One extension's satellites in this session, with the approval they run under. */
export interface Live {
  readonly slot: SatellitePool;
  readonly installed: Installed;
  readonly approval: Approval;
}

export interface ScopeCallOptions extends InvokeOptions {
  readonly strand?: string;
  /** Told the invocation's ledger id as soon as its row exists. */
  readonly onInvocation?: (id: number) => void;
  /** The operator bypassed the hook bus (`tether call --no-hooks`): written on the ledger row. */
  readonly hooksBypassed?: boolean;
  /**
   * Told each line the invocation writes with its `log` capability, once the
   * broker's log has it (escaped, cut, rate-bounded): `tether mcp` passes them
   * to its client as logging notifications.
   */
  readonly onLog?: (level: "debug" | "info" | "warn" | "error", line: string) => void;
  /**
   * The satellites waiting on this invocation, when a capability call asks it (broker/base/waits.ts):
   * an extension on it is not asked, and the invocation's own capability calls carry it on.
   */
  readonly chain?: WaitChain;
}

/** What an invocation came to, with its own ledger row (null when it was refused before it had one). */
export interface CallResult<K extends AnyKind = AnyKind> {
  readonly outcome: InvocationOutcome<K>;
  readonly invocationId: number | null;
}

/** A hook's answer (or a session-facing kind's) as it came back, with its own ledger row. */
export type HookOutcome<K extends "event" | SessionKind = "event"> = CallResult<K>;

/** What the kernel does for a scope (it owns the slots, the ledger and the capability environment). */
export interface ScopeHost {
  boot(scope: SessionScope, extension: string): Promise<void>;
  invoke<K extends AnyKind>(
    scope: SessionScope,
    extension: string,
    kind: K,
    name: string,
    payload: string,
    options: ScopeCallOptions,
  ): Promise<CallResult<K>>;
  /** A policy changed: requests on the wire are judged again. */
  policyChanged(): void;
}

export class SessionScope {
  readonly id: string;
  /** This session's satellites, by extension. */
  readonly live = new Map<string, Live>();
  readonly #host: ScopeHost;
  #policy: SessionPolicy = {};
  #capHooks: CapHookStage | null = null;
  #released = false;
  #afterRelease: CapHookStage | null = null;
  /** The search of the session holding this scope (the `search.query` capability asks it); null when none. */
  searcher: SessionSearch | null = null;
  /** The hooks of the session holding this scope, as reported acts ask them (`act.before`); null when none. */
  acts: SessionActs | null = null;
  /** The run state of the session holding this scope (`model.complete` is exclusive work); null when none. */
  models: SessionModels | null = null;

  constructor(id: string, host: ScopeHost) {
    this.id = id;
    this.#host = host;
  }

  get policy(): SessionPolicy {
    return this.#policy;
  }

  /** Offline, or a narrower allow list: the next act obeys it, and requests on the wire are judged again. */
  setPolicy(policy: SessionPolicy): void {
    this.#policy = policy;
    this.#host.policyChanged();
  }

  /** Whether a live `Session` holds this scope (one per id). */
  get claimed(): boolean {
    return this.#capHooks !== null;
  }

  /** The `cap_call` stage of this session's capability calls (none when no session holds it). */
  get capHooks(): CapHookStage {
    return this.#capHooks ?? this.#afterRelease ?? noHooks;
  }

  /** Held by a session from here on: its bus is the `cap_call` stage. Refused while another holds it. */
  claim(capHooks: CapHookStage): void {
    if (this.claimed)
      throw new TetherError(
        BrokerCode.sessionInUse,
        `Session '${this.id}' is already open on this broker; close it first or use another id`,
      );
    this.#capHooks = capHooks;
    this.#released = false;
    this.#afterRelease = null;
  }

  /** Whether a session held this scope and let go of it (closing or closed). */
  get released(): boolean {
    return this.#released;
  }

  /**
   * Let go by its session: calls through the scope no longer ask its bus. `afterwards` judges the
   * capability calls still made here (a managed `close`, calls finishing): the session's hooks can
   * no longer be asked, so it refuses what they would have been asked about.
   */
  release(afterwards?: CapHookStage): void {
    if (this.#capHooks !== null) this.#released = true;
    this.#afterRelease = afterwards ?? null;
    this.#capHooks = null;
    this.searcher = null;
    this.acts = null;
  }

  /** Boots `extension`'s satellite here now (a failed boot is known before anything is asked). */
  activate(extension: string): Promise<void> {
    return this.#host.boot(this, extension);
  }

  /** Stops `extension`'s satellite here: letting its open call finish, or with `abort`, now. */
  async deactivate(extension: string, options: { abort?: boolean } = {}): Promise<void> {
    const live = this.live.get(extension);
    if (live === undefined) return;
    this.live.delete(extension);
    if (options.abort === true) await live.slot.destroy("was stopped: its session was destroyed");
    else await live.slot.close();
  }

  /** Stops every satellite of this session (a stopped satellite boots again on its next call). */
  async stopAll(options: { abort?: boolean } = {}): Promise<void> {
    await Promise.all([...this.live.keys()].map((name) => this.deactivate(name, options)));
  }

  /**
   * Asks `extension` one invocation of `kind` (`payload` is JSON text: a tool's
   * arguments, a command's argument text as is, a hook's or a session-facing
   * kind's payload). Never rejects for the extension's faults: they are answers.
   */
  invoke<K extends AnyKind>(
    extension: string,
    kind: K,
    name: string,
    payload: string,
    options: ScopeCallOptions = {},
  ): Promise<CallResult<K>> {
    return this.#host.invoke(this, extension, kind, name, payload, options);
  }

  /** One tool of `extension`, as the kernel makes it: no hooks. */
  async callTool(extension: string, tool: string, args: string, options: ScopeCallOptions = {}) {
    return (await this.invoke(extension, "tool", tool, args, options)).outcome;
  }

  /** `/name args` of `extension`. */
  async runCommand(extension: string, name: string, argsText: string, options: ScopeCallOptions = {}) {
    return (await this.invoke(extension, "command", name, argsText, options)).outcome;
  }

  /** Asks `extension`'s hook about `event` (`payload` is JSON text). */
  callHook(extension: string, event: string, payload: string, options: ScopeCallOptions = {}): Promise<HookOutcome> {
    return this.invoke(extension, "event", event, payload, options);
  }
}
