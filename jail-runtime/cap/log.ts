/** `log`: a line in the broker's log, under the extension's name. Best effort. */
import { castCap } from "./invocation.js";

export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * Writes one line to the broker's log (rate-bounded; never throws).
 *
 * @example
 * ```ts
 * import { log } from "@tether/cap";
 * log.write("info", "cache miss for Lisbon");
 * ```
 */
export function write(level: LogLevel, msg: string): void {
  castCap("log", { level, msg: String(msg) });
}
