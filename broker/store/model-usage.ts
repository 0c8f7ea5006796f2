/**
 * What an extension's `model.complete` calls used, read from the audit: each
 * allowed call's row holds the tokens it used (input + output) in `bytes`
 * (broker/caps/model-complete.ts). The day's budget (broker/caps/model-budget.ts)
 * starts from this sum.
 */
import type { Store } from "./open.js";

/** Tokens `extension`'s model calls used from `since` (ms since the epoch) on, as this broker's audit has them. */
export function modelTokensSince(store: Store, extension: string, since: number): number {
  const row = store.sqlite
    .prepare(
      "SELECT coalesce(sum(bytes), 0) AS used FROM cap_audit WHERE extension = ? AND capability = " +
        "'model.complete' AND decision = 'allowed' AND at >= ?",
    )
    .get(extension, since) as { used: number };
  return row.used;
}
