/**
 * `tether audit`'s own argument: --limit. The queries, --since and the lines
 * printed are the operator layer's (broker/operator/audit.ts).
 */

/** A --limit value that is not a positive whole number (a usage error). */
export class LimitError extends Error {
  override readonly name = "LimitError";
}

/** Parses --limit: a whole number from 1 up. */
export function parseLimit(limit: string): number {
  const n = /^\d+$/.test(limit.trim()) ? Number(limit.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new LimitError(`--limit '${limit}': expected a whole number of rows, 1 or more`);
  return n;
}
