/**
 * What an extension's `model.complete` calls used, read from the audit: each
 * call that reached a provider holds the tokens charged for it in `bytes`
 * (broker/caps/model-complete.ts: input + output, all it held when it was
 * cancelled — a cancel at the session's close is a `denied` row); a refusal
 * before any provider was asked holds none. The day's budget (broker/caps/model-budget.ts)
 * starts from this sum.
 */
import type { Store } from "./open.js";

/** Tokens `extension`'s model calls used from `since` (ms since the epoch) on, as this broker's audit has them. */
export function modelTokensSince(store: Store, extension: string, since: number): number {
  const row = store.sqlite
    .prepare(
      "SELECT coalesce(sum(bytes), 0) AS used FROM cap_audit WHERE extension = ? AND capability = " +
        "'model.complete' AND at >= ?",
    )
    .get(extension, since) as { used: number };
  return row.used;
}
