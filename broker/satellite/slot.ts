/**
 * The satellite of one (session, extension): a queue in front of one process,
 * booted on first use, replaced after a death or a timeout, reaped when idle.
 * Up to `capacity` invocations are open on the process at once (the manifest's
 * `[limits] concurrency`; 1 by default), each with its own token.
 *
 * A caller who can wait never sees `busy`: calls wait their turn here.
 */
import { DocumentBoundsError, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import type { Cap } from "../../jail-runtime/wire/frames.js";
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";
import type { CapDispatcher, CapRefusalObserver, CapReply, InvocationInfo } from "../base/capability.js";
import { WireCode, BrokerCode, TetherError } from "../base/errors.js";
import type { InvocationRequest, InvokeOptions } from "../base/invocation.js";
import { failure, type InvocationOutcome } from "../base/outcome.js";
import { SatelliteProcess } from "./process.js";
import type { RunningInvocation, SatelliteSpec, SatelliteState } from "./spec.js";

export interface SlotOptions {
  readonly spec: SatelliteSpec;
  /** Idle time after which the process is shut down (it boots again on the next call). 0 = never. */
  readonly idleMs: number;
  readonly dispatch?: CapDispatcher;
  readonly observeRefusals?: CapRefusalObserver;
  /** Told each time a process boots, for metrics and tests. */
  readonly onBoot?: (process: SatelliteProcess) => void;
  /** Invocations open on the process at once (default 1: one at a time). */
  readonly capacity?: number;
}

interface Job {
  readonly req: InvocationRequest;
  readonly options: InvokeOptions;
  resolve(outcome: InvocationOutcome): void;
  started: boolean;
  running: RunningInvocation | null;
  detach(): void;
}

/** Serves only `report.emit`: what a slot with no broker behind it offers. */
export const reportOnlyDispatcher: CapDispatcher = async (call, info) => {
  if (call.cap === "report.emit") {
    const text = (call.args as { text?: unknown } | null)?.text;
    if (typeof text === "string") info.report(text);
    return { ok: true };
  }
  return {
    ok: false,
    error: {
      code: WireCode.denied,
      msg: `Capability '${call.cap.slice(0, 64)}' is not available (rule: no capability dispatcher)`,
    },
  };
};

/** The wait before replacing a satellite that broke the protocol, doubled per violation in a row. */
export const VIOLATION_BACKOFF_MS = 100;
export const MAX_VIOLATION_BACKOFF_MS = 5_000;
const VIOLATION_MEMORY_MS = 60_000;

export class SatelliteSlot {
  readonly #options: SlotOptions;
  readonly #queue: Job[] = [];
  #process: SatelliteProcess | null = null;
  #pumping = false;
  #closed = false;
  #destroyed = false;
  #idleTimer: NodeJS.Timeout | null = null;
  #drained: Array<() => void> = [];
  /** The jobs whose invocations are open on the process. */
  readonly #current = new Set<Job>();
  /** Invocations open on the process at once. */
  readonly capacity: number;
  /** How many processes this slot has booted. */
  boots = 0;

  constructor(options: SlotOptions) {
    this.#options = options;
    this.capacity = Math.max(1, options.capacity ?? 1);
  }

  /** Invocations open now. */
  get open(): number {
    return this.#current.size;
  }

  get name(): string {
    return this.#options.spec.name;
  }

  /** The live process's state, or "dead" when there is none. */
  get state(): SatelliteState {
    return this.#process?.state ?? "dead";
  }

  /** The live process, if any (for tests and diagnostics). */
  get process(): SatelliteProcess | null {
    return this.#process;
  }

  /** Queues one invocation and resolves with its outcome; never rejects. */
  invoke<K extends AnyKind>(req: InvocationRequest<K>, options: InvokeOptions = {}): Promise<InvocationOutcome<K>> {
    if (this.#closed) return Promise.resolve(failure(BrokerCode.closed, `The satellite of '${this.name}' is closed`));
    if (options.signal?.aborted) return Promise.resolve(failure(WireCode.cancelled, "Cancelled before it started"));
    return new Promise<InvocationOutcome<K>>((resolve) => {
      const job: Job = {
        req,
        options,
        started: false,
        running: null,
        resolve: (o) => {
          job.detach();
          // A job is settled only by a failure or by its own run's outcome, of kind `K`.
          resolve(o as InvocationOutcome<K>);
        },
        detach: () => {},
      };
      const { signal, late } = options;
      if (signal !== undefined || late !== undefined) {
        const stop = (code: WireCode, queued: string, open?: string) => {
          if (!job.started) {
            const at = this.#queue.indexOf(job);
            if (at >= 0) this.#queue.splice(at, 1);
            job.resolve(failure(code, queued));
          } else {
            job.running?.cancel(open, code);
          }
        };
        const onAbort = () => stop(WireCode.cancelled, "Cancelled while waiting its turn");
        signal?.addEventListener("abort", onAbort, { once: true });
        const timer =
          late === undefined
            ? undefined
            : setTimeout(() => stop(WireCode.timeout, late.message, late.message), late.afterMs);
        job.detach = () => {
          signal?.removeEventListener("abort", onAbort);
          clearTimeout(timer);
        };
      }
      this.#queue.push(job);
      this.#clearIdle();
      this.#pump();
    });
  }

  /**
   * Starts queued jobs while there is room on the live process; with none
   * live, boots one first (`#pumping` covers the boot, so one pump at a time
   * hands out the room). Each finished job pumps again. Synchronous while a
   * process is live: every call passes here, and a promise per pass cost more
   * than the rest of the queue.
   */
  #pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    let booting = false;
    try {
      while (this.#queue.length > 0 && this.#current.size < this.capacity) {
        const live = this.#process;
        if (live === null || (live.state !== "ready" && live.state !== "busy")) {
          booting = true;
          void this.#bootThenPump();
          return;
        }
        void this.#runJob(live, this.#queue.shift()!);
      }
    } finally {
      if (!booting) this.#pumping = false;
    }
    if (this.#queue.length === 0 && this.#current.size === 0) this.#onIdle();
  }

  /**
   * Boots a process for the queue (`#pumping` is held until it is up), then
   * pumps; a failed boot fails everyone waiting on it, with its reason.
   */
  async #bootThenPump(): Promise<void> {
    try {
      await this.#ready();
    } catch (err) {
      const code = err instanceof TetherError ? err.code : BrokerCode.bootFailed;
      for (const job of this.#queue.splice(0)) job.resolve(failure(code, (err as Error).message));
    } finally {
      this.#pumping = false;
    }
    this.#pump();
  }

  async #runJob(process: SatelliteProcess, job: Job): Promise<void> {
    job.started = true;
    const info: InvocationInfo = {
      extension: this.name,
      kind: job.req.kind,
      name: job.req.name,
      strand: job.req.strand,
      report: (text) => job.options.onReport?.(text),
    };
    const dispatch = job.options.dispatch ?? this.#options.dispatch ?? reportOnlyDispatcher;
    const onCap = async (cap: Cap): Promise<CapReply> => {
      let args: unknown;
      try {
        args = parseBoundedJson(cap.args);
      } catch (err) {
        if (err instanceof DocumentBoundsError)
          return {
            ok: false,
            error: {
              code: WireCode.badArguments,
              msg: `Capability '${cap.cap.slice(0, 64)}' arguments are ${err.message}`,
            },
          };
        return {
          ok: false,
          error: {
            code: WireCode.badArguments,
            msg: `Capability '${cap.cap.slice(0, 64)}' arguments are not JSON text`,
          },
        };
      }
      return dispatch({ cap: cap.cap, args }, info);
    };
    let running: RunningInvocation;
    try {
      running = process.run(job.req, onCap);
    } catch (err) {
      job.resolve(failure(WireCode.crashed, (err as Error).message));
      this.#pump();
      return;
    }
    job.running = running;
    this.#current.add(job);
    try {
      if (job.options.signal?.aborted) running.cancel();
      job.resolve(await running.outcome);
      await running.settled;
    } finally {
      this.#current.delete(job);
    }
    this.#pump();
  }

  /**
   * Boots the process now rather than on the first call (session activation
   * does, to learn of a failed boot or a served/declared mismatch up front).
   * Rejects with the boot's TetherError.
   */
  async boot(): Promise<void> {
    if (this.#closed) throw new TetherError(BrokerCode.closed, `The satellite of '${this.name}' is closed`);
    await this.#ready();
    if (!this.#pumping && this.#queue.length === 0 && this.#current.size === 0) this.#onIdle();
  }

  #booting: Promise<SatelliteProcess> | null = null;
  /** Protocol violations in a row (none for VIOLATION_MEMORY_MS resets them), and when the last was. */
  #violations = 0;
  #lastViolationAt = 0;

  /** How long the next boot waits: 0, or a back-off after protocol violations in a row. */
  get replacementBackoffMs(): number {
    if (this.#violations === 0 || Date.now() - this.#lastViolationAt > VIOLATION_MEMORY_MS) return 0;
    return Math.min(VIOLATION_BACKOFF_MS * 2 ** (this.#violations - 1), MAX_VIOLATION_BACKOFF_MS);
  }

  /** The live process, booting one if needed; concurrent callers share one boot. */
  #ready(): Promise<SatelliteProcess> {
    const live = this.#process;
    if (live !== null && (live.state === "ready" || live.state === "busy")) return Promise.resolve(live);
    if (this.#booting === null) {
      this.#booting = this.#bootProcess().finally(() => {
        this.#booting = null;
      });
    }
    return this.#booting;
  }

  async #bootProcess(): Promise<SatelliteProcess> {
    this.#process = null;
    // A satellite that broke the protocol is replaced, but not at once again and again: each
    // replacement costs the broker's thread, so a repeat offender waits longer (it only delays
    // this extension's own callers).
    const wait = this.replacementBackoffMs;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const process = await SatelliteProcess.boot(this.#options.spec);
    this.boots++;
    if (this.#options.observeRefusals) process.observeRefusals(this.#options.observeRefusals);
    process.onDeath((reason) => {
      if (this.#process === process) this.#process = null;
      if (!reason.startsWith("broke the protocol")) return;
      const now = Date.now();
      this.#violations = now - this.#lastViolationAt > VIOLATION_MEMORY_MS ? 1 : this.#violations + 1;
      this.#lastViolationAt = now;
    });
    this.#options.onBoot?.(process);
    if (this.#destroyed) {
      await process.destroy("the slot was destroyed while it booted");
      throw new TetherError(BrokerCode.closed, `The satellite of '${this.name}' is closed`);
    }
    this.#process = process;
    return process;
  }

  #onIdle(): void {
    for (const done of this.#drained.splice(0)) done();
    if (this.#closed || this.#options.idleMs <= 0 || this.#process === null) return;
    this.#clearIdle();
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = null;
      const process = this.#process;
      if (process !== null && this.#queue.length === 0 && this.#current.size === 0 && !this.#pumping) {
        this.#process = null;
        void process.close();
      }
    }, this.#options.idleMs);
    this.#idleTimer.unref();
  }

  #clearIdle(): void {
    if (this.#idleTimer !== null) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
  }

  /** Takes no new calls, lets queued and open ones finish, then shuts the process down. Safe to call twice. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#clearIdle();
    if (this.#pumping || this.#queue.length > 0 || this.#current.size > 0)
      await new Promise<void>((r) => this.#drained.push(r));
    const process = this.#process;
    this.#process = null;
    await process?.close();
  }

  /**
   * Aborts now: queued calls and the open ones fail `closed` with `reason` (the
   * broker stopped the satellite — a revocation, its session destroyed — the
   * extension did not crash), and the process is killed. Safe to call twice.
   */
  async destroy(reason = "was destroyed", code: BrokerCode = BrokerCode.closed): Promise<void> {
    this.#closed = true;
    this.#destroyed = true;
    this.#clearIdle();
    for (const open of this.#current)
      open.resolve(failure(code, `The satellite of '${this.name}' ${reason} during '${open.req.name}'`));
    for (const job of this.#queue.splice(0)) job.resolve(failure(code, `The satellite of '${this.name}' ${reason}`));
    const process = this.#process;
    this.#process = null;
    await process?.destroy(reason);
    for (const done of this.#drained.splice(0)) done();
  }
}
