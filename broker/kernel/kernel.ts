/**
 * The kernel: scopes, the approvals in force, and one way to ask an extension
 * anything — `invoke(scope, extension, kind, name, payload, options)`, the
 * kind's row (kinds.ts) saying whether and for how long, behind the
 * interceptors features registered (interceptor.ts). Closing stops every
 * satellite, then runs the close hooks, the last registered first.
 */
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";
import { BrokerCode, TetherError, WireCode } from "../base/errors.js";
import { failure } from "../base/outcome.js";
import { describeChain, type WaitChain, waitKey, waits } from "../base/waits.js";
import type { Logger } from "../base/log.js";
import type { CapEnvironment } from "../caps/dispatcher.js";
import type { Approval, Installed, Registry } from "../registry/registry.js";
import type { SatellitePool } from "../satellite/pool.js";
import type { Ledger } from "../store/ledger.js";
import type { Store } from "../store/open.js";
import { watchChangeStamp } from "../store/change-stamp.js";
import { ApprovalChanges, FALLBACK_EVERY_MS, type StoreReads } from "./approval-changes.js";
import { approvalInForce, syncApprovals } from "./approval-sync.js";
import type { CloseHook, KernelHost } from "./host.js";
import { type Call, composed, type Interceptor, type Invoke } from "./interceptor.js";
import { type InvocationParts, recordRefusal, runInvocation, timedInvocation } from "./invocation.js";
import { kindRow, type KindTable } from "./kinds.js";
import { type CallResult, type Live, type ScopeCallOptions, SessionScope } from "./session-scope.js";

export interface KernelParts {
  readonly home: string;
  readonly store: Store;
  readonly registry: Registry;
  readonly ledger: Ledger;
  readonly log: Logger;
  readonly caps: CapEnvironment;
  readonly kinds: KindTable;
  /** Reads the store's data_version (another process's commits move it) and its installs and approvals. */
  readonly storeReads: StoreReads;
  /** Starts the satellites of an approved extension in a session. */
  readonly launch: (session: string, installed: Installed, approval: Approval) => SatellitePool;
  readonly graceMs: number;
}

export class Kernel implements KernelHost {
  readonly home: string;
  readonly store: Store;
  readonly registry: Registry;
  readonly ledger: Ledger;
  readonly log: Logger;
  readonly approvals: ApprovalChanges;
  readonly #parts: KernelParts;
  readonly #invocation: InvocationParts;
  readonly #scopes = new Map<string, SessionScope>();
  readonly #interceptors: Interceptor[] = [];
  readonly #closeHooks: CloseHook[] = [];
  #invoke: Invoke;
  #closed = false;
  /** Stops hearing other processes' changes (the stamp's watch and the fallback timer). */
  readonly #stopHearing: () => void;

  constructor(parts: KernelParts) {
    this.#parts = parts;
    ({ home: this.home, store: this.store, registry: this.registry, ledger: this.ledger, log: this.log } = parts);
    this.approvals = new ApprovalChanges(parts.registry, parts.storeReads);
    // The one subscriber that brings live satellites in line with a change.
    this.approvals.subscribe(() =>
      syncApprovals(this.registry, this.#scopes.values(), this.log, () => parts.caps.work.recheck()),
    );
    this.#invocation = { ...parts, approvals: this.approvals };
    this.#invoke = (call) => this.#base(call);
    // Another process's change is heard when its stamp moves, and found within FALLBACK_EVERY_MS if not.
    const unwatch = watchChangeStamp(parts.store, () => this.approvals.heard());
    const fallback = setInterval(() => this.approvals.heard(), FALLBACK_EVERY_MS);
    fallback.unref();
    this.#stopHearing = () => {
      unwatch();
      clearInterval(fallback);
    };
  }

  get closed(): boolean {
    return this.#closed;
  }

  scope(id: string): SessionScope {
    let scope = this.#scopes.get(id);
    if (scope === undefined) this.#scopes.set(id, (scope = new SessionScope(id, this.#scopeHost)));
    return scope;
  }

  approved(name: string): { installed: Installed; approval: Approval } {
    return approvalInForce(this.registry, name);
  }

  intercept(interceptor: Interceptor): () => void {
    this.#interceptors.push(interceptor);
    this.#compose();
    return () => {
      const at = this.#interceptors.indexOf(interceptor);
      if (at >= 0) this.#interceptors.splice(at, 1);
      this.#compose();
    };
  }

  onClose(hook: CloseHook): void {
    this.#closeHooks.push(hook);
  }

  /** Asks `extension` one invocation of `kind` in `scope`. Never rejects for the extension's faults. */
  invoke<K extends AnyKind>(
    scope: SessionScope,
    extension: string,
    kind: K,
    name: string,
    payload: string,
    options: ScopeCallOptions = {},
  ): Promise<CallResult<K>> {
    return this.#invoke({ scope, extension, kind, name, payload, options }) as Promise<CallResult<K>>;
  }

  /** Lets in-flight calls finish, stops every satellite, then runs the close hooks. Safe twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopHearing();
    await Promise.all([...this.#scopes.values()].map((scope) => scope.stopAll()));
    await this.#runCloseHooks({ abort: false, again: false });
  }

  /** Aborts in-flight calls and kills every satellite now, then runs the close hooks. Safe twice. */
  async destroy(): Promise<void> {
    const again = this.#closed;
    this.#closed = true;
    this.#stopHearing();
    await Promise.all([...this.#scopes.values()].map((scope) => scope.stopAll({ abort: true })));
    await this.#runCloseHooks({ abort: true, again });
  }

  async #runCloseHooks(how: Parameters<CloseHook>[0]): Promise<void> {
    for (const hook of [...this.#closeHooks].reverse()) await hook(how);
  }

  #compose(): void {
    this.#invoke = composed(this.#interceptors, (call) => this.#base(call));
  }

  readonly #scopeHost = {
    boot: async (scope: SessionScope, extension: string) => {
      const { outcome } = await this.#invoke({ scope, extension, kind: "boot", name: "", payload: "", options: {} });
      if (!outcome.ok) throw new TetherError(outcome.error.code as BrokerCode, outcome.error.msg);
    },
    invoke: <K extends AnyKind>(s: SessionScope, e: string, k: K, n: string, p: string, o: ScopeCallOptions) =>
      this.invoke(s, e, k, n, p, o),
    policyChanged: () => void this.#parts.caps.work.recheck(),
  };

  /** Behind the interceptors: the kind's row, then the satellite. */
  async #base(call: Call): Promise<CallResult> {
    if (this.#closed) throw new TetherError(BrokerCode.closed, "The broker is closed");
    const { scope, extension, kind, name, payload, options } = call;
    if (kind !== "boot" && waits(options.chain, scope.id, extension)) return this.#reentry(call, options.chain ?? []);
    const live = this.#live(scope, extension);
    if (kind === "boot") {
      await live.slot.boot();
      return { outcome: { ok: true, value: "" }, invocationId: null };
    }
    const row = kindRow(this.#parts.kinds, kind);
    if (row === undefined)
      return { outcome: failure(WireCode.badKind, `This broker asks no kind '${kind}'`), invocationId: null };
    const rule = row.rule({ extension, installed: live.installed, grants: live.approval.grants, name, payload });
    if ("refused" in rule) {
      const code = rule.refused.error.code;
      const id = rule.recorded ? recordRefusal(this.#invocation, { ...call, kind }, code) : null;
      return { outcome: rule.refused, invocationId: id };
    }
    const invocation = { live, scope, kind, name, args: payload, deadlineMs: rule.deadlineMs, options };
    return row.waitCounts
      ? timedInvocation(this.#invocation, invocation, row.what(name))
      : runInvocation(this.#invocation, invocation);
  }

  /** Refuses to ask an extension that waits, further up, on the call asking it (broker/base/waits.ts). */
  #reentry(call: Call, waiting: WaitChain): CallResult {
    const key = waitKey(call.scope.id, call.extension);
    const outcome = failure(
      WireCode.busy,
      `'${call.extension}' was not asked ${call.kind} '${call.name}': it is waiting on this very call ` +
        `(${describeChain([...waiting, key])}); an extension is never asked again by a call it waits on — ` +
        "answer without it",
    );
    const kind = call.kind as AnyKind;
    return { outcome, invocationId: recordRefusal(this.#invocation, { ...call, kind }, WireCode.busy) };
  }

  /** The extension's satellites in this scope, started under the approval in force when none run. */
  #live(scope: SessionScope, name: string): Live {
    this.approvals.notice();
    const existing = scope.live.get(name);
    if (existing !== undefined) return existing;
    const { installed, approval } = this.approved(name);
    const live = { slot: this.#parts.launch(scope.id, installed, approval), installed, approval };
    scope.live.set(name, live);
    return live;
  }
}
