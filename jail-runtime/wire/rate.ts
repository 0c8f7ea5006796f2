/**
 * A token bucket per invocation: best-effort capabilities (partials, log lines)
 * drop past their rate. The broker keeps one per invocation; the SDK's test kit
 * keeps the same, so a test sees what a satellite would lose. Plain TypeScript,
 * no runtime-specific imports.
 */
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
