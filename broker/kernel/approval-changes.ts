/**
 * The approvals in force, and their changes as events. A change written in
 * this process (the registry's own writes, or the fleet's pull applied to its
 * store) is told at once; one committed by another process (a `tether revoke`
 * beside a running broker) shows in SQLite's data_version, which `notice()`
 * reads — the kernel calls it before every invocation and every capability
 * call. Subscribers stop or update live satellites and mark active sets stale;
 * reading anything here has no effect.
 */
import type { Registry } from "../registry/registry.js";

export class ApprovalChanges {
  readonly #dataVersion: () => number;
  readonly #listeners = new Set<() => void>();
  #seenDataVersion: number;
  /** The store's data_version was read in this synchronous stretch. */
  #noticed = false;
  #epoch = 0;

  constructor(registry: Registry, dataVersion: () => number) {
    this.#dataVersion = dataVersion;
    this.#seenDataVersion = dataVersion();
    registry.onChange(() => this.#changed());
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

  /** Tells the subscribers when another process committed to the store since the last look. */
  notice(): void {
    // Once per synchronous stretch: a call asks more than once before it first waits, and nothing
    // another process commits can be seen between those asks.
    if (this.#noticed) return;
    this.#noticed = true;
    queueMicrotask(() => (this.#noticed = false));
    const version = this.#dataVersion();
    if (version === this.#seenDataVersion) return;
    this.#seenDataVersion = version;
    this.#changed();
  }

  #changed(): void {
    this.#epoch++;
    for (const listener of [...this.#listeners]) listener();
  }
}
