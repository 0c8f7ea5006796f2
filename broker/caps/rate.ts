/**
 * The rate of best-effort capabilities (the bucket lives in the wire: the SDK's test kit keeps the
 * same), and the longest text they carry.
 */
export { Rate } from "../../jail-runtime/wire/rate.js";

/** Longest text a partial or a log line carries. */
export const MAX_TEXT = 4096;
