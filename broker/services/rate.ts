/**
 * Each route's rate limit: a token bucket per `[[service]]` row, shared by all
 * clients (they all hold the one serve token), holding `rate_per_minute`
 * requests and refilled evenly over a minute.
 */
interface Bucket {
  tokens: number;
  at: number;
}

export class ServiceRates {
  readonly #buckets = new Map<string, Bucket>();

  constructor(private readonly now: () => number = () => Date.now()) {}

  /**
   * Takes one request from `key`'s bucket: 0 when it may go
   * ahead, else the seconds until one is free (for Retry-After).
   */
  take(key: string, perMinute: number): number {
    const now = this.now();
    const perMs = perMinute / 60_000;
    const bucket = this.#buckets.get(key) ?? { tokens: perMinute, at: now };
    bucket.tokens = Math.min(perMinute, bucket.tokens + (now - bucket.at) * perMs);
    bucket.at = now;
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
  }
}
