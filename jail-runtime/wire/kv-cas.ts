/**
 * What `kv.cas` and `skv.cas` swap: strings, stored as JSON strings (so
 * `kv.get` reads back the string a cas wrote, and a string `kv.put` wrote
 * can be swapped). Shared by the broker (broker/caps/kv-cas.ts) and the test
 * kit's in-memory kv, so both compare the same text and refuse in the same
 * words.
 */

/** The stored JSON text of a cas string: what is compared and what is written. */
export const casText = (value: string): string => JSON.stringify(value);

/** The string a stored JSON text holds, or undefined when it holds other JSON. */
export function casString(text: string): string | undefined {
  const value: unknown = JSON.parse(text);
  return typeof value === "string" ? value : undefined;
}

/** What a cas answers: swapped, or the value that was there instead. */
export type CasAnswer = { readonly ok: true } | { readonly ok: false; readonly current: string | null };

/**
 * A key holding bytes or other JSON cannot be compared to a string: refused rather than answered
 * with a current that is not one.
 */
export const CAS_STRING_RULE = "cas.string";
export const casNotString = (family: "kv" | "skv", holds: "bytes" | "json"): string =>
  `${family}.cas: the key holds ${holds === "bytes" ? "bytes" : "JSON other than a string"}; cas compares and ` +
  `swaps strings only`;

/** The quota refusal, in `put`'s words. */
export const casOverQuota = (family: "kv" | "skv", quota: number, after: number): string =>
  `${family}.cas: storage quota of ${quota} bytes would be exceeded (${after} bytes)`;
