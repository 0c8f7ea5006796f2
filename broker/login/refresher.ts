/**
 * The daemon-level refresher `tether serve` runs: it renews every stored
 * sign-in as it falls due, so a token is fresh before a request asks for it
 * (injection also refreshes at use, for brokers that run no refresher). One
 * timer, set for the earliest due time; a failed refresh is logged by
 * `LoginTokens` and retried at the next pass.
 */
import type { Logger } from "../base/log.js";
import type { Logins } from "./logins.js";
import { dueAt } from "./refresh.js";

/** Looks again at least this often: sign-ins made by another process appear in the home. */
const MAX_WAIT_MS = 5 * 60_000;
/** And no sooner than this after a pass, so a failing server is not hammered. */
const MIN_WAIT_MS = 5_000;

export class Refresher {
  readonly #logins: Logins;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;
  #pass: Promise<unknown> = Promise.resolve();

  constructor(logins: Logins, log: Logger) {
    this.#logins = logins;
    this.#log = log;
  }

  /**
   * Refreshes every declared sign-in that is due now; answers when the next
   * one falls due (ms since the epoch), or null when none will.
   */
  async runOnce(): Promise<number | null> {
    let next: number | null = null;
    for (const { extension, row } of this.#logins.declared()) {
      const stored = await this.#logins.tokens.fresh(extension, row);
      const due = stored === null || stored.refresh_token === null ? null : dueAt(stored);
      if (due !== null && (next === null || due < next)) next = due;
    }
    return next;
  }

  start(): void {
    this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#pass = this.runOnce().then(
        (next) =>
          this.#schedule(
            Math.min(MAX_WAIT_MS, Math.max(MIN_WAIT_MS, next === null ? MAX_WAIT_MS : next - this.#logins.clock.now())),
          ),
        (err: unknown) => {
          this.#log.warn(`login refresher: a pass failed: ${(err as Error).message}`);
          this.#schedule(MAX_WAIT_MS);
        },
      );
    }, ms);
    // A refresher never keeps the process alive on its own.
    this.#timer.unref();
  }

  /** Stops the timer and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    await this.#pass;
  }
}
