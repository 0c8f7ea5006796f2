/**
 * Initializers (`[init]`, docs/initializers.md): an extension's `init`
 * runs once per approved version — keyed by the approval in force (extension,
 * artifact hash, manifest hash) — in the daemon scope, bounded by its
 * `[init] deadline_ms`. Before any invocation of an extension that declares
 * `[init]` the broker makes sure it ran: first here if not (concurrent callers
 * share one run). A success is recorded in the store and never run again, by
 * this broker or another on the home; a failure makes the extension inactive
 * in this broker process, with the reason, and is run again by the next one
 * (the next `Broker.open`).
 */
import { BrokerCode, TetherError } from "../base/errors.js";
import { failure, type Failure } from "../base/outcome.js";
import { DAEMON_SCOPE } from "../kernel/session-scope.js";
import type { Approval, Installed } from "../registry/registry.js";
import type { KernelHost } from "../kernel/host.js";
import type { Call, Interceptor } from "../kernel/interceptor.js";
import type { CallResult, HookOutcome, SessionScope } from "../kernel/session-scope.js";
import { SessionAnswers, type SessionPayload } from "../../jail-runtime/wire/session-kinds.js";
import * as v from "valibot";
import { InitRecords, type InitKey } from "../store/init-records.js";

/** What one `initialize` came to (`tether approve`, `tether serve`). */
export interface InitReport {
  /** Whether the init ran now (false: it had already run, or failed earlier in this process). */
  readonly ran: boolean;
  readonly ok: boolean;
  readonly message?: string;
  readonly error?: string;
  readonly ms: number;
}

/** The longest failure reason kept: one line. */
const MAX_REASON = 512;

/** One line of a failure, with no stack and nothing past the first line. */
function reasonOf(text: string): string {
  const line = (text.split("\n")[0] ?? "").trim();
  return line.length > MAX_REASON ? `${line.slice(0, MAX_REASON - 1)}…` : line || "it failed without a reason";
}

/** What an invocation of an extension whose init failed is answered. */
export function inactiveMessage(extension: string, reason: string): string {
  return (
    `'${extension}' is inactive: its initializer failed: ${reason}. It runs again at ` +
    `the next start of the broker; fix it and reinstall, or see: tether logs ${extension}`
  );
}

const keyOf = (installed: Installed, approval: Approval): InitKey => ({
  extension: installed.name,
  artifactHash: approval.artifactHash,
  manifestHash: approval.manifestHash,
});
const text = (key: InitKey) => `${key.extension}\0${key.artifactHash}\0${key.manifestHash}`;

export class Initializers {
  readonly #broker: KernelHost;
  readonly #records: InitRecords;
  /** Runs of this process, by version: in flight or settled (a failure is not run again here). */
  readonly #runs = new Map<string, Promise<InitReport>>();
  /** The versions whose run here (or an earlier one on record) succeeded: the gate lets them by at once. */
  readonly #succeeded = new Set<string>();

  constructor(broker: KernelHost) {
    this.#broker = broker;
    this.#records = new InitRecords(broker.store);
  }

  get records(): InitRecords {
    return this.#records;
  }

  /**
   * Makes sure the init of the approval in force of `extension` ran (running
   * it now if not), with `reason` handed to it; what came of it.
   */
  initialize(extension: string, reason: SessionPayload<"init">["reason"] = "start"): Promise<InitReport> {
    const { installed, approval } = this.#broker.approved(extension);
    return this.#ensure(installed, approval, reason);
  }

  /**
   * null when `extension` may be invoked (no `[init]`, or it ran); else the `inactive` failure.
   * Answered at once when nothing is to wait for (every call passes here: no promise for those).
   */
  gate(scope: SessionScope, extension: string): null | Promise<Failure | null> {
    if (this.#broker.closed) return null;
    // Another process's change noticed first: a live satellite of a replaced approval is gone from `live` after this.
    this.#broker.approvals.notice();
    const { installed, approval } = scope.live.get(extension) ?? this.#broker.approved(extension);
    if (installed.manifest.init === undefined) return null;
    if (this.#succeeded.has(text(keyOf(installed, approval)))) return null;
    return this.#ensure(installed, approval, "start").then((report) =>
      report.ok ? null : failure(BrokerCode.inactive, inactiveMessage(extension, report.error ?? "")),
    );
  }

  #ensure(installed: Installed, approval: Approval, reason: SessionPayload<"init">["reason"]): Promise<InitReport> {
    if (installed.manifest.init === undefined) return Promise.resolve({ ran: false, ok: true, ms: 0 });
    const key = keyOf(installed, approval);
    const known = this.#runs.get(text(key));
    if (known !== undefined) {
      // This process ran it (or runs it now): its result, not run again.
      return known.then((r) => ({ ...r, ran: false, ms: 0 }));
    }
    const run = this.#run(installed, key, reason);
    this.#runs.set(text(key), run);
    void run.then((report) => {
      if (report.ok) this.#succeeded.add(text(key));
    });
    return run;
  }

  async #run(installed: Installed, key: InitKey, reason: SessionPayload<"init">["reason"]): Promise<InitReport> {
    const done = this.#records.get(key);
    // Another broker (or an earlier start) initialized this version.
    if (done?.ranAt != null)
      return { ran: false, ok: true, ...(done.message !== null ? { message: done.message } : {}), ms: 0 };
    const started = performance.now();
    const log = this.#broker.log;
    const scope = this.#broker.scope(DAEMON_SCOPE);
    const wasLive = scope.live.has(key.extension);
    const payload: SessionPayload<"init"> = { version: installed.version, reason };
    let outcome: HookOutcome<"init">["outcome"];
    try {
      outcome = (await scope.invoke(key.extension, "init", "", JSON.stringify(payload))).outcome;
    } catch (err) {
      outcome = failure(err instanceof TetherError ? err.code : "crashed", (err as Error).message);
    } finally {
      // The init's satellite is not kept for it (a provider or a service starts its own when asked).
      if (!wasLive && !this.#broker.closed) await scope.deactivate(key.extension).catch(() => undefined);
    }
    const ms = Math.round(performance.now() - started);
    if (outcome.ok) {
      const answer = v.safeParse(SessionAnswers.init, JSON.parse(outcome.value));
      const message = answer.success ? answer.output.message : undefined;
      if (!this.#broker.closed) this.#records.succeeded(key, installed.version, message ?? null);
      log.info(`initializer ran in ${ms} ms${message !== undefined ? `: ${message}` : ""}`, {
        extension: key.extension,
        version: installed.version,
      });
      return { ran: true, ok: true, ...(message !== undefined ? { message } : {}), ms };
    }
    const error = reasonOf(outcome.error.msg);
    if (!this.#broker.closed) this.#records.failed(key, installed.version, error);
    log.warn(
      `initializer failed (${outcome.error.code}): ${error}; the ` +
        `extension is inactive until it succeeds at a later start`,
      { extension: key.extension, version: installed.version },
    );
    return { ran: true, ok: false, error, ms };
  }
}

/**
 * The kernel's interceptor that puts every invocation (and a session
 * activation's boot) behind `gate`: an extension whose init failed is answered
 * `inactive`. The init itself is what the gate waits for.
 */
export function initGate(inits: Initializers): Interceptor {
  const answer = (call: Call, refused: Failure): CallResult => {
    if (call.kind === "boot") throw new TetherError(BrokerCode.inactive, refused.error.msg);
    return { outcome: refused, invocationId: null };
  };
  return (next) => (call) => {
    // Not an async function (a promise per call for nothing), so a throw is turned into a
    // rejection here, as one would have been: callers hold a promise, never a throw.
    try {
      if (call.kind === "init") return next(call);
      const gated = inits.gate(call.scope, call.extension);
      if (gated === null) return next(call);
      return gated.then((refused) => (refused === null ? next(call) : answer(call, refused)));
    } catch (err) {
      return Promise.reject(err);
    }
  };
}
