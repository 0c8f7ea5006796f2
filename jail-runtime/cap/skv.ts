/**
 * `skv`: the extension's durable storage in the current session only — what
 * one session keeps (a managed extension's state) is apart from every other
 * session's. The broker knows the session of each invocation; nothing here
 * names it. Counted with `kv` against the manifest's `[limits] kv_bytes`.
 */
import { kvCalls, type KvCalls } from "./kv-family.js";

const calls = kvCalls("skv");

/**
 * Reads a JSON value (or null when the key is absent or holds bytes).
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * const plan = await skv.get("plan");
 * ```
 */
export const get: KvCalls["get"] = calls.get;

/**
 * Reads bytes (or null when the key is absent or holds JSON).
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * const draft = await skv.getBytes("draft.bin");
 * ```
 */
export const getBytes: KvCalls["getBytes"] = calls.getBytes;

/**
 * Stores a JSON value or bytes under `key`.
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * await skv.put("plan", { step: 1 });
 * ```
 */
export const put: KvCalls["put"] = calls.put;

/**
 * Compare-and-set in this session's keys: writes the string `value` (null:
 * deletes the key) only if the key holds the string `expected` now (null:
 * only if it holds nothing); answers `{ok: false, current}` with what it
 * holds instead, so concurrent calls in the session lose no update.
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * const claimed = await skv.cas("owner", null, "planner");
 * if (!claimed.ok) console.log(`already taken by ${claimed.current}`);
 * ```
 */
export const cas: KvCalls["cas"] = calls.cas;

/**
 * Deletes `key`; true when it existed.
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * await skv.del("plan");
 * ```
 */
export const del: KvCalls["del"] = calls.del;

/**
 * Keys starting with `prefix` (exactly, case-sensitively), sorted, at most `limit`.
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * const notes = await skv.list("note/", 50);
 * ```
 */
export const list: KvCalls["list"] = calls.list;
