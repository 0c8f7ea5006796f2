/**
 * Capability work in flight, so that the broker knows what it still owes:
 * `close()` waits for every operation, `destroy()` aborts them, and a request
 * still on the wire (a hop being answered, a body streaming) is judged again
 * whenever a policy may have changed — a revocation, a narrowed approval, a
 * session going offline, an operator deny — and cut off if it no longer
 * passes. In-process changes ask at once (`recheck()`); changes made by
 * another process (another `tether` revoking) are found by a light poll that
 * runs only while egress is in flight.
 */

import { setMaxListeners } from "node:events";

/** A request on the wire, as the pipeline registered it. */
export interface LiveEgress {
  readonly extension: string;
  readonly sessionId: string;
  /** Judges this hop again against the policy as it stands now (no new lookup); a refusal or null. */
  recheck(): Promise<{ rule: string; reason: string } | null>;
  /** Cuts the request off with that refusal. */
  withdraw(refusal: { rule: string; reason: string }): void;
}

/** How often the poll looks for another process's changes while egress is in flight. */
export const RECHECK_POLL_MS = 200;

export class CapabilityWork {
  readonly #operations = new Set<Promise<unknown>>();
  readonly #egress = new Set<LiveEgress>();
  readonly #destroyed = new AbortController();

  constructor() {
    // Every fetch in flight listens to it (up to the broker's bound): not a leak.
    setMaxListeners(0, this.#destroyed.signal);
  }
  #poll: NodeJS.Timeout | null = null;
  #rechecking: Promise<void> | null = null;
  #again = false;

  /** Aborted when the broker is destroyed: every operation stops. */
  get signal(): AbortSignal {
    return this.#destroyed.signal;
  }

  get pending(): number {
    return this.#operations.size;
  }

  /** Runs `operation`, counted until it settles. */
  track<T>(operation: Promise<T>): Promise<T> {
    this.#operations.add(operation);
    const done = () => this.#operations.delete(operation);
    operation.then(done, done);
    return operation;
  }

  /** Registers a request on the wire; the returned function unregisters it. */
  hold(egress: LiveEgress): () => void {
    this.#egress.add(egress);
    this.#poll ??= setInterval(() => void this.recheck(), RECHECK_POLL_MS).unref();
    return () => {
      this.#egress.delete(egress);
      if (this.#egress.size === 0 && this.#poll !== null) {
        clearInterval(this.#poll);
        this.#poll = null;
      }
    };
  }

  /** Judges every request on the wire again; those that no longer pass are withdrawn. */
  recheck(): Promise<void> {
    if (this.#rechecking !== null) {
      // A change during a recheck is judged by one more pass, not lost.
      this.#again = true;
      return this.#rechecking;
    }
    this.#rechecking = (async () => {
      do {
        this.#again = false;
        for (const egress of [...this.#egress]) {
          const refusal = await egress.recheck().catch((err: unknown) => ({
            rule: "internal",
            reason: `the policy could not be judged again: ${(err as Error).message}`,
          }));
          if (refusal !== null && this.#egress.has(egress)) egress.withdraw(refusal);
        }
      } while (this.#again);
    })().finally(() => {
      this.#rechecking = null;
    });
    return this.#rechecking;
  }

  /** Waits for every operation in flight (and those they start) to settle. */
  async settle(): Promise<void> {
    while (this.#operations.size > 0) await Promise.allSettled([...this.#operations]);
  }

  /** Aborts every operation in flight. */
  abort(reason: string): void {
    this.#destroyed.abort(new Error(reason));
  }
}
