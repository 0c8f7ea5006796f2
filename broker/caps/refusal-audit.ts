/**
 * Refusals are cheap to cause: a satellite can send capability calls that are
 * refused as fast as it can write them (a forged token, a capability that does
 * not exist). Each is still a decision the audit keeps — but past an allowance
 * per window the refusals of one kind are counted, not written one by one: one
 * row per kind and window says how many there were.
 */
import type { AuditRow } from "../store/ledger.js";

/** Refusal rows written one by one per window, before aggregating. */
export const REFUSALS_WRITTEN_PER_WINDOW = 32;
export const REFUSAL_WINDOW_MS = 1_000;

export class RefusalAudit {
  readonly #write: (row: AuditRow) => void;
  #written = 0;
  #windowStart = 0;
  /** Per kind (capability and rule): the first suppressed row, and how many. */
  readonly #suppressed = new Map<string, { row: AuditRow; count: number }>();
  #timer: NodeJS.Timeout | null = null;

  constructor(write: (row: AuditRow) => void) {
    this.#write = write;
  }

  record(row: AuditRow): void {
    const now = Date.now();
    if (now - this.#windowStart >= REFUSAL_WINDOW_MS) {
      this.flush();
      this.#windowStart = now;
      this.#written = 0;
    }
    if (this.#written < REFUSALS_WRITTEN_PER_WINDOW) {
      this.#written++;
      this.#write(row);
      return;
    }
    const key = `${row.capability}\0${row.rule}`;
    const held = this.#suppressed.get(key);
    if (held !== undefined) held.count++;
    else this.#suppressed.set(key, { row, count: 1 });
    this.#timer ??= setTimeout(() => this.flush(), REFUSAL_WINDOW_MS).unref();
  }

  /** Writes one row per kind suppressed so far. */
  flush(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    for (const { row, count } of this.#suppressed.values()) {
      this.#write({
        ...row,
        invocationId: null,
        target: `${count} more refused like this within ${REFUSAL_WINDOW_MS} ms (aggregated)`,
        bytes: count,
      });
    }
    this.#suppressed.clear();
  }
}
