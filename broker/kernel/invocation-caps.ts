/**
 * What the capability dispatcher knows of one invocation (`CapContext`): its
 * row, its deadline, the grants in force when a call is judged, and — made
 * only when a capability asks — its abort signal and wait chain. A class, so
 * that an invocation that makes no capability call (most) costs one small
 * object, not a literal of closures and getters built on every call.
 */
import { type WaitChain, waitKey } from "../base/waits.js";
import type { CapContext } from "../caps/context.js";
import type { InvocationEnd } from "../caps/invocation-end.js";
import type { SessionPolicy } from "../caps/policy.js";
import type { Grants } from "../registry/grants.js";
import type { Registry } from "../registry/registry.js";
import type { ApprovalChanges } from "./approval-changes.js";
import { currentApproval } from "./approval-sync.js";
import type { Live, ScopeCallOptions, SessionScope } from "./session-scope.js";

/** What the grants are read from. */
export interface GrantSources {
  readonly registry: Registry;
  readonly approvals: ApprovalChanges;
}

export class InvocationCaps implements CapContext {
  readonly sessionId: string;
  readonly invocationId: number;
  readonly deadlineAt: number;
  readonly onLog: ScopeCallOptions["onLog"];
  readonly #parts: GrantSources;
  readonly #scope: SessionScope;
  readonly #live: Live;
  readonly #ended: InvocationEnd;
  readonly #outerChain: WaitChain | undefined;
  #chain: WaitChain | undefined;

  constructor(
    parts: GrantSources,
    scope: SessionScope,
    live: Live,
    invocationId: number,
    deadlineMs: number,
    ended: InvocationEnd,
    options: ScopeCallOptions,
  ) {
    this.sessionId = scope.id;
    this.invocationId = invocationId;
    this.deadlineAt = Date.now() + deadlineMs;
    this.onLog = options.onLog;
    this.#parts = parts;
    this.#scope = scope;
    this.#live = live;
    this.#ended = ended;
    this.#outerChain = options.chain;
  }

  get signal(): AbortSignal {
    return this.#ended.signal;
  }

  /** The satellites waiting on this invocation, itself last (broker/base/waits.ts). */
  get chain(): WaitChain {
    return (this.#chain ??= [...(this.#outerChain ?? []), waitKey(this.sessionId, this.#live.slot.name)]);
  }

  /**
   * Read at dispatch: a narrowed approval applies to the next capability call; a revoked one allows
   * nothing. Another process's commit is noticed first (its change stops the satellite).
   */
  grants(): Grants {
    this.#parts.approvals.notice();
    const current = this.#scope.live.get(this.#live.slot.name);
    if (current !== undefined) return current.approval.grants;
    // No longer live: stopped by its session or the broker closing (its open call may finish
    // under the approval it has), or by a revocation or a changed install (nothing allowed).
    const live = this.#live;
    return currentApproval(this.#parts.registry, live.installed)?.grants ?? { ...live.approval.grants, net: [] };
  }

  session(): SessionPolicy {
    return this.#scope.policy;
  }
}
