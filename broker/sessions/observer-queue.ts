/**
 * One observer's queue in one session: the events it is owed, in order, handed
 * over one batch at a time. Whatever queues while a batch is being handled goes
 * in the next batch (up to MAX_OBSERVED_BATCH). Pushing never waits: past the
 * bound the oldest events are dropped and counted, and the next batch says how
 * many (`dropped`); `seq` is given at push, so a gap in it is exactly a drop.
 * A batch that fails is noted and not sent again; delivery goes on.
 */
import { MAX_OBSERVED_BATCH, type ObservedEvent, type ObservedKind } from "../../jail-runtime/wire/session-kinds.js";

/** How many events one observer may be owed before its oldest are dropped. */
export const OBSERVER_QUEUE_BOUND = 1024;
/** The most one batch's events may hold, as JSON (well inside a frame, and quick to hand over). */
export const MAX_BATCH_BYTES = 1024 * 1024;
/** The most one event's `data` may hold, as JSON; larger data is replaced by a note of its size. */
export const MAX_EVENT_DATA_BYTES = 64 * 1024;

/** One batch as handed to the observer (the `observe` payload without the session id). */
export interface ObserverBatch {
  readonly events: readonly ObservedEvent[];
  readonly dropped: number;
}

/** How a batch went: handled, or why not (crashed, timed out, no longer active…). */
export type BatchResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

/** What `session.status()` shows of an observer. */
export interface ObserverCounters {
  /** Events in batches the observer handled. */
  readonly delivered: number;
  /** Events dropped unsent: the queue was full, observing was turned off, or the session closed first. */
  readonly dropped: number;
  /** Events queued now (the batch being handled included). */
  readonly pending: number;
  /** Batches that failed (crashed, timed out, not answered); their events are not sent again. */
  readonly failed: number;
  /** The last failed batch's error, for the operator (one word: status rows go out as JSON as they are). */
  readonly failure: string | null;
}

export interface QueueEvents {
  /** The first drop since the last batch went out (one note per episode, not per event). */
  readonly onOverflow: (extension: string, bound: number) => void;
  readonly onFailure: (extension: string, batch: ObserverBatch, error: string) => void;
  /** The queue has nothing queued and nothing in flight. */
  readonly onIdle: () => void;
}

export class ObserverQueue {
  readonly extension: string;
  readonly #deliver: (batch: ObserverBatch) => Promise<BatchResult>;
  readonly #events: QueueEvents;
  readonly #bound: number;
  #queued: ObservedEvent[] = [];
  #inFlight = 0;
  #seq = 0;
  #droppedSinceBatch = 0;
  #delivered = 0;
  #dropped = 0;
  #failed = 0;
  #failure: string | null = null;
  #running = false;

  constructor(
    extension: string,
    deliver: (batch: ObserverBatch) => Promise<BatchResult>,
    events: QueueEvents,
    bound = OBSERVER_QUEUE_BOUND,
  ) {
    this.extension = extension;
    this.#deliver = deliver;
    this.#events = events;
    this.#bound = bound;
  }

  get counters(): ObserverCounters {
    return {
      delivered: this.#delivered,
      dropped: this.#dropped,
      pending: this.#queued.length + this.#inFlight,
      failed: this.#failed,
      failure: this.#failure,
    };
  }

  /** Nothing queued, nothing being handled. */
  get idle(): boolean {
    return !this.#running && this.#queued.length === 0;
  }

  /** Queues one event (its `seq` given here) and starts a batch if none is out. Never waits. */
  push(kind: ObservedKind, atMs: number, data: Record<string, unknown>): void {
    this.#queued.push({ seq: ++this.#seq, kind, at_ms: atMs, data: bounded(data) });
    if (this.#queued.length > this.#bound) {
      // The oldest go: an observer that fell behind catches up with the session as it is now,
      // and the seq gap says exactly what it missed.
      if (this.#droppedSinceBatch === 0) this.#events.onOverflow(this.extension, this.#bound);
      this.#drop(this.#queued.length - this.#bound);
    }
    if (!this.#running) void this.#pump();
  }

  /** Drops everything queued (not what is being handled), counted; returns how many. */
  dropQueued(): number {
    const n = this.#queued.length;
    this.#drop(n);
    if (this.idle) this.#events.onIdle();
    return n;
  }

  #drop(n: number): void {
    this.#queued.splice(0, n);
    this.#droppedSinceBatch += n;
    this.#dropped += n;
  }

  /** Hands over batches until nothing is queued; one at a time, so the order holds. */
  async #pump(): Promise<void> {
    this.#running = true;
    try {
      while (this.#queued.length > 0) {
        const events = this.#take();
        const batch: ObserverBatch = { events, dropped: this.#droppedSinceBatch };
        this.#droppedSinceBatch = 0;
        this.#inFlight = events.length;
        let result: BatchResult;
        try {
          result = await this.#deliver(batch);
        } catch (err) {
          result = { ok: false, error: (err as Error).message };
        }
        this.#inFlight = 0;
        if (result.ok) {
          this.#delivered += events.length;
        } else {
          this.#failed += 1;
          this.#failure = result.error;
          this.#events.onFailure(this.extension, batch, result.error);
        }
      }
    } finally {
      this.#running = false;
      this.#inFlight = 0;
    }
    this.#events.onIdle();
  }

  /** The next batch: up to MAX_OBSERVED_BATCH events, and no more than MAX_BATCH_BYTES of them (at least one). */
  #take(): ObservedEvent[] {
    let bytes = 0;
    let n = 0;
    while (n < this.#queued.length && n < MAX_OBSERVED_BATCH) {
      bytes += Buffer.byteLength(JSON.stringify(this.#queued[n]));
      if (n > 0 && bytes > MAX_BATCH_BYTES) break;
      n += 1;
    }
    return this.#queued.splice(0, n);
  }
}

/** An event's data as sent: JSON-clean, and replaced by a note of its size when it is too large to send. */
function bounded(data: Record<string, unknown>): Record<string, unknown> {
  let text: string;
  try {
    text = JSON.stringify(data) ?? "{}";
  } catch (err) {
    // A cycle or a BigInt from a caller inside the broker: the observer still learns the event happened.
    return { unserializable: (err as Error).message.slice(0, 256) };
  }
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_EVENT_DATA_BYTES) return { truncated: true, bytes };
  return JSON.parse(text) as Record<string, unknown>;
}
