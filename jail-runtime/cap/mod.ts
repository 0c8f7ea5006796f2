/**
 * The capability prelude: what a jailed program may reach. Every call here is
 * a `cap` frame judged by the broker under the open invocation's token.
 */
export { CapError, callCap } from "./invocation.js";
export { serveLoop, RUNTIME_NAME } from "./runtime.js";
import { castCap } from "./invocation.js";
export * as net from "./net.js";
export * as kv from "./kv.js";
export * as skv from "./skv.js";
export type { CasResult } from "./kv-family.js";
export * as db from "./db.js";
export * as log from "./log.js";
export { act, actBefore, ActBlocked, type ActHandle } from "./act.js";
export * as model from "./model.js";
export type { CompleteOptions, ModelCompletion, ModelMessage, ModelRequest } from "./model.js";
export * as search from "./search.js";
export type { SearchAnswer, SearchHit } from "./search.js";
export { FetchResult, type FetchInit } from "./net.js";

/** Partial progress, best effort. */
export const report = {
  /**
   * Emits a partial report; never throws and never waits.
   *
   * @example
   * ```ts
   * import { report } from "@tether/cap";
   * report.emit("Fetched 3 of 10 pages");
   * ```
   */
  emit(text: string): void {
    castCap("report.emit", { text: String(text) });
  },
};
