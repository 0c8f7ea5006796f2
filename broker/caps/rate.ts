/** A token bucket per invocation: best-effort capabilities drop past their rate. */
export class Rate {
  #tokens: number;
  #last = Date.now();
  dropped = 0;

  constructor(readonly perSecond: number) {
    this.#tokens = perSecond;
  }

  take(): boolean {
    const now = Date.now();
    this.#tokens = Math.min(this.perSecond, this.#tokens + ((now - this.#last) / 1000) * this.perSecond);
    this.#last = now;
    if (this.#tokens < 1) {
      this.dropped++;
      return false;
    }
    this.#tokens -= 1;
    return true;
  }
}

/** Longest text a partial or a log line carries. */
export const MAX_TEXT = 4096;
