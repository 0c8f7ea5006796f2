/**
 * A counting bound on concurrent work (fetches per invocation, per extension,
 * in the whole broker). Past it, callers wait in order until a permit is
 * returned or their signal aborts (the invocation's deadline or end).
 */
export class Permits {
  #free: number;
  readonly #waiting: Array<{ grant: () => void }> = [];

  constructor(
    readonly limit: number,
    /** Named in refusals: `limits.fetches`, `operator:max_fetches_per_extension` … */
    readonly rule: string,
  ) {
    this.#free = limit;
  }

  get inUse(): number {
    return this.limit - this.#free;
  }

  /** A release function, or null when `signal` aborted first. */
  async acquire(signal: AbortSignal): Promise<(() => void) | null> {
    if (signal.aborted) return null;
    if (this.#free > 0 && this.#waiting.length === 0) {
      this.#free--;
      return this.#releaser();
    }
    return new Promise((resolve) => {
      const entry = {
        grant: () => {
          signal.removeEventListener("abort", onAbort);
          resolve(this.#releaser());
        },
      };
      const onAbort = () => {
        const at = this.#waiting.indexOf(entry);
        if (at >= 0) this.#waiting.splice(at, 1);
        resolve(null);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(entry);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next !== undefined) next.grant();
      else this.#free++;
    };
  }
}

/** Acquires every bound in order (narrowest first); null, with the one that was not granted, when the signal aborts. */
export async function acquireAll(
  bounds: readonly Permits[],
  signal: AbortSignal,
): Promise<{ release: () => void } | { waitingOn: Permits }> {
  const held: Array<() => void> = [];
  for (const bound of bounds) {
    const release = await bound.acquire(signal);
    if (release === null) {
      for (const r of held.reverse()) r();
      return { waitingOn: bound };
    }
    held.push(release);
  }
  return { release: () => held.reverse().forEach((r) => r()) };
}
