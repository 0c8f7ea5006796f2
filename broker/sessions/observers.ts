/**
 * A session's observers: extensions approved to `[observe]` some of the
 * session's events, told about them in batches, answering nothing. Notifying
 * never waits for an observer (the turn goes on); each observer has its own
 * queue (`observer-queue.ts`) so a slow or failing one holds up no other.
 *
 *   fire("agent_settled") ─► turn        ┐
 *   fire("usage")         ─► usage       ├─► each active observer approved for the kind
 *   fire("before_compact"), notify(…)    │     ─► its queue ─► one `observe` invocation per batch
 *                         ─► compaction  │
 *   open / reload / prefer ─► session    ┘
 */
import type { ObservedKind, SessionPayload } from "../../jail-runtime/wire/session-kinds.js";
import type { Logger } from "../base/log.js";
import type { SessionScope } from "../kernel/session-scope.js";
import type { Known } from "./known.js";
import {
  ObserverQueue,
  OBSERVER_QUEUE_BOUND,
  type BatchResult,
  type ObserverBatch,
  type ObserverCounters,
} from "./observer-queue.js";

export type { ObserverCounters } from "./observer-queue.js";

/** How long `close()` lets observers take what is queued before the rest is dropped. */
export const OBSERVER_CLOSE_DEADLINE_MS = 2_000;

/** The harness's events an observer is told about, and as which kind. */
const OBSERVED_EVENTS: Readonly<Record<string, ObservedKind>> = {
  agent_settled: "turn",
  usage: "usage",
  before_compact: "compaction",
};

export interface ObserversHost {
  /** The observers active in the session now, each with the kinds it is approved for. */
  subscribers(): ReadonlyMap<string, readonly ObservedKind[]>;
  /** Hands one batch to `extension` (one invocation of kind `observe`). */
  deliver(extension: string, payload: SessionPayload<"observe">): Promise<BatchResult>;
  readonly log: Logger;
}

export interface ObserversOptions {
  /** Events one observer may be owed before its oldest are dropped. */
  readonly bound?: number;
  readonly closeDeadlineMs?: number;
  readonly now?: () => number;
}

export class Observers {
  readonly sessionId: string;
  readonly #host: ObserversHost;
  readonly #options: ObserversOptions;
  readonly #queues = new Map<string, ObserverQueue>();
  /** Turned off for this session (a managed extension's `prepare` answered `observe: false`). */
  readonly #off = new Set<string>();
  #waiters: Array<() => void> = [];
  #closed = false;

  constructor(sessionId: string, host: ObserversHost, options: ObserversOptions = {}) {
    this.sessionId = sessionId;
    this.#host = host;
    this.#options = options;
  }

  /** A harness event as it was fired (payload checked): queued for observers when it is one they are told about. */
  harnessEvent(event: string, data: Readonly<Record<string, unknown>>): void {
    const kind = OBSERVED_EVENTS[event];
    if (kind === undefined) return;
    // `before_compact` is the harness saying it is about to compact; `session.compact` tells `compacted` after.
    this.notify(kind, kind === "compaction" ? { phase: "before", reason: data["reason"] } : { ...data });
  }

  /** Queues one event for every active observer approved for `kind`; returns at once. */
  notify(kind: ObservedKind, data: Readonly<Record<string, unknown>>): void {
    if (this.#closed) return;
    const at = (this.#options.now ?? Date.now)();
    const subscribers = this.#host.subscribers();
    this.#prune(subscribers);
    for (const [extension, kinds] of subscribers) {
      if (!kinds.includes(kind) || this.#off.has(extension)) continue;
      this.#queue(extension).push(kind, at, { ...data });
    }
  }

  /** Turns observing on or off for one extension in this session; turning it off drops what is queued (counted). */
  setEnabled(extension: string, enabled: boolean): void {
    if (enabled) {
      this.#off.delete(extension);
      return;
    }
    this.#off.add(extension);
    this.#queues.get(extension)?.dropQueued();
  }

  /** An active observer's counters (null when `extension` observes nothing here). */
  counters(extension: string): ObserverCounters | null {
    if (!this.#host.subscribers().has(extension)) return null;
    return this.#queues.get(extension)?.counters ?? { delivered: 0, dropped: 0, pending: 0, failed: 0, failure: null };
  }

  /** Resolves once every queue is empty and no batch is being handled (for tests and a graceful close). */
  idle(): Promise<void> {
    if (this.#allIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /**
   * Takes no more events, gives the observers up to `deadlineMs` to be told
   * what is queued, then drops the rest (counted and logged). A batch still
   * being handled then is left to finish: the session's close waits for open calls.
   */
  async close(deadlineMs = this.#options.closeDeadlineMs ?? OBSERVER_CLOSE_DEADLINE_MS): Promise<{ dropped: number }> {
    if (this.#closed) return { dropped: 0 };
    this.#closed = true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, deadlineMs);
    });
    await Promise.race([this.idle(), late]);
    clearTimeout(timer);
    return { dropped: this.#dropAll("the session closed before they were delivered") };
  }

  /** Drops everything queued at once (the session is destroyed). */
  destroy(): void {
    this.#closed = true;
    this.#dropAll("the session was destroyed");
  }

  #dropAll(why: string): number {
    let dropped = 0;
    for (const queue of this.#queues.values()) {
      const n = queue.dropQueued();
      if (n > 0)
        this.#host.log.warn(`observer '${queue.extension}' missed ${n} events: ${why}`, {
          extension: queue.extension,
          session: this.sessionId,
          dropped: n,
        });
      dropped += n;
    }
    return dropped;
  }

  /** Queued events of an extension that no longer observes here (deactivated, revoked) are dropped, counted. */
  #prune(subscribers: ReadonlyMap<string, readonly ObservedKind[]>): void {
    for (const queue of this.#queues.values()) {
      if (!subscribers.has(queue.extension)) queue.dropQueued();
    }
  }

  #queue(extension: string): ObserverQueue {
    let queue = this.#queues.get(extension);
    if (queue !== undefined) return queue;
    const log = this.#host.log;
    const session = this.sessionId;
    queue = new ObserverQueue(
      extension,
      (batch) =>
        this.#host.deliver(extension, { session_id: session, events: [...batch.events], dropped: batch.dropped }),
      {
        onOverflow: (name, bound) =>
          log.warn(
            `observer '${name}' fell behind: more than ${bound} events queued, its oldest are dropped (the ` +
              `next batch counts them)`,
            { extension: name, session },
          ),
        onFailure: (name, batch, error) =>
          log.warn(
            `observer '${name}' failed a batch of ${batch.events.length} events ` +
              `(${seqRange(batch)}): ${error}; delivery goes on with the next batch`,
            { extension: name, session },
          ),
        onIdle: () => this.#wake(),
      },
      this.#options.bound ?? OBSERVER_QUEUE_BOUND,
    );
    this.#queues.set(extension, queue);
    return queue;
  }

  #allIdle(): boolean {
    for (const queue of this.#queues.values()) if (!queue.idle) return false;
    return true;
  }

  #wake(): void {
    if (!this.#allIdle()) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve();
  }
}

function seqRange(batch: ObserverBatch): string {
  const first = batch.events[0]?.seq;
  const last = batch.events[batch.events.length - 1]?.seq;
  return first === last ? `seq ${first}` : `seq ${first}–${last}`;
}

/**
 * The observers among a session's active extensions: each one whose approval
 * (the one the active set was planned under, whether or not a satellite is up
 * yet) grants `observe` kinds its manifest declares, in registry order.
 */
export function activeObservers(
  active: readonly string[],
  known: ReadonlyMap<string, Known>,
): Map<string, readonly ObservedKind[]> {
  const out = new Map<string, readonly ObservedKind[]>();
  for (const name of active) {
    const k = known.get(name);
    const declared = k?.installed?.manifest.observe?.events;
    const granted = k?.grants?.observe;
    if (declared === undefined || granted === undefined) continue;
    const kinds = declared.filter((kind) => granted.includes(kind));
    if (kinds.length > 0) out.set(name, kinds);
  }
  return out;
}

/** Delivers a batch through the session's scope: one `observe` invocation with its own token; the answer is ignored. */
export function deliverThrough(scope: SessionScope): ObserversHost["deliver"] {
  return async (extension, payload) => {
    const { outcome } = await scope.invoke(extension, "observe", "", JSON.stringify(payload));
    return outcome.ok ? { ok: true } : { ok: false, error: `${outcome.error.code}: ${outcome.error.msg}` };
  };
}
