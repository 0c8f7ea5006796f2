/**
 * The approvals in force, and their changes as events. A change written in
 * this process (the registry's own writes, or the fleet's pull applied to its
 * store) is told at once. One committed by another process (a `tether revoke`
 * beside a running broker) is heard: the registry that wrote it touched the
 * store's change stamp (store/change-stamp.ts), which the kernel watches and
 * answers with `heard()`. What may have been missed is found by fallback reads
 * of SQLite's data_version: `notice()`, which the kernel calls before every
 * invocation and every capability call, reads it when the last read is
 * NOTICE_EVERY_MS old or more, and the kernel calls `heard()` every
 * FALLBACK_EVERY_MS besides. data_version moves with every commit of another
 * connection, most of them another broker's ledger rows: when it moved, the
 * installs and approvals themselves are read (store/registry-state.ts) and
 * only a change there is told — else every broker on a home would bring its
 * sessions in line again after each of its neighbours' calls. So an
 * invocation or capability call that starts NOTICE_EVERY_MS or more after
 * another process committed a change runs under the change, whether or not
 * its stamp was heard (docs/performance.md).
 * Subscribers stop or update live satellites and mark active sets stale;
 * reading anything here has no effect.
 */
import type { Registry } from "../registry/registry.js";

/** How old the last read of data_version may be when an invocation or capability call starts. */
export const NOTICE_EVERY_MS = 2;
/** How often data_version is read when nothing asks (what a missed stamp waits for at most). */
export const FALLBACK_EVERY_MS = 1_000;

/** What is read of the store: its data_version, and the installs and approvals as one string. */
export interface StoreReads {
  readonly dataVersion: () => number;
  readonly registryState: () => string;
}

export class ApprovalChanges {
  readonly #reads: StoreReads;
  readonly #now: () => number;
  readonly #listeners = new Set<() => void>();
  #seenDataVersion: number;
  #seenState: string;
  /** When data_version was last read (the monotonic clock, ms). */
  #readAt: number;
  #epoch = 0;

  /** `now`: a monotonic clock in ms (default performance.now; tests pass their own). */
  constructor(registry: Registry, reads: StoreReads, now: () => number = () => performance.now()) {
    this.#reads = reads;
    this.#now = now;
    this.#seenDataVersion = reads.dataVersion();
    this.#seenState = reads.registryState();
    this.#readAt = now();
    registry.onChange(() => {
      // Its own write: told at once, and the state it left is what a later look compares with.
      this.#seenState = reads.registryState();
      this.#changed();
    });
  }

  /** How many changes were told so far: a caller that kept the number knows whether any came since. */
  get epoch(): number {
    return this.#epoch;
  }

  /** Calls `listener` after every change of the approvals or installs; returns the unsubscribe. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Before an invocation or a capability call: looks for another process's
   * commit, unless a look was made within NOTICE_EVERY_MS.
   */
  notice(): void {
    const now = this.#now();
    if (now - this.#readAt < NOTICE_EVERY_MS) return;
    this.#look(now);
  }

  /** The change stamp moved, or the fallback timer fired: looks now. */
  heard(): void {
    this.#look(this.#now());
  }

  #look(now: number): void {
    this.#readAt = now;
    const version = this.#reads.dataVersion();
    if (version === this.#seenDataVersion) return;
    this.#seenDataVersion = version;
    const state = this.#reads.registryState();
    if (state === this.#seenState) return;
    this.#seenState = state;
    this.#changed();
  }

  #changed(): void {
    this.#epoch++;
    for (const listener of [...this.#listeners]) listener();
  }
}
