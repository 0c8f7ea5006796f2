/**
 * Test support: a clock the test drives. `instant` sleeps advance the time and
 * resolve at once (device-code polling without waiting); held sleeps wait for
 * `release()` (a redirect that never comes).
 */
import type { Clock } from "../../broker/login/clock.js";

export class FakeClock implements Clock {
  t = 1_800_000_000_000;
  instant = true;
  /** Every sleep asked for, in ms, in order. */
  readonly slept: number[] = [];
  #held: Array<() => void> = [];

  now(): number {
    return this.t;
  }

  advance(ms: number): void {
    this.t += ms;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.slept.push(ms);
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (this.instant) {
      this.t += ms;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal?.reason as Error);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#held.push(() => {
        signal?.removeEventListener("abort", onAbort);
        this.t += ms;
        resolve();
      });
    });
  }

  /** How many sleeps are held. */
  get held(): number {
    return this.#held.length;
  }

  /** Ends every held sleep. */
  release(): void {
    for (const wake of this.#held.splice(0)) wake();
  }
}
