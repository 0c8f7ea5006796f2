/**
 * `kv`: per-extension durable storage in the broker's store, bounded by the
 * manifest's `[limits] kv_bytes`.
 */
import { kvCalls, type KvCalls } from "./kv-family.js";

const calls = kvCalls("kv");

/**
 * Reads a JSON value (or null when the key is absent or holds bytes).
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * const last = await kv.get("last-city");
 * ```
 */
export const get: KvCalls["get"] = calls.get;

/**
 * Reads bytes (or null when the key is absent or holds JSON).
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * const icon = await kv.getBytes("icon.png");
 * ```
 */
export const getBytes: KvCalls["getBytes"] = calls.getBytes;

/**
 * Stores a JSON value or bytes under `key`.
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * await kv.put("last-city", { name: "Lisbon" });
 * ```
 */
export const put: KvCalls["put"] = calls.put;

/**
 * Compare-and-set: writes the string `value` under `key` (null: deletes it)
 * only if the key holds the string `expected` now (null: only if it holds
 * nothing), in one step no other session or host can come between; answers
 * `{ok: false, current}` with what it holds instead. The retry loop of a
 * counter shared by every session (and every host of a fleet):
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * let seen = (await kv.get("hits")) as string | null;
 * for (;;) {
 *   const next = String(Number(seen ?? "0") + 1);
 *   const swapped = await kv.cas("hits", seen, next);
 *   if (swapped.ok) break;
 *   seen = swapped.current;
 * }
 * ```
 */
export const cas: KvCalls["cas"] = calls.cas;

/**
 * Deletes `key`; true when it existed.
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * await kv.del("last-city");
 * ```
 */
export const del: KvCalls["del"] = calls.del;

/**
 * Keys starting with `prefix` (exactly, case-sensitively), sorted, at most `limit`.
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * const cities = await kv.list("city/", 50);
 * ```
 */
export const list: KvCalls["list"] = calls.list;
