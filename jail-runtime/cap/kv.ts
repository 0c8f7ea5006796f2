/**
 * `kv`: per-extension durable storage in the broker's store, bounded by the
 * manifest's `[limits] kv_bytes`.
 */
import { callCap } from "./invocation.js";
import { toBase64 } from "./base64.js";
import { jsonParse } from "./intrinsics.js";

/**
 * Reads a JSON value (or null when the key is absent or holds bytes).
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * const last = await kv.get("last-city");
 * ```
 */
export async function get(key: string): Promise<unknown> {
  const value = (await callCap("kv.get", { key })) as { json?: string; bytes?: Uint8Array } | null;
  if (value === null || value.json === undefined) return null;
  return jsonParse(value.json);
}

/**
 * Reads bytes (or null when the key is absent or holds JSON).
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * const icon = await kv.getBytes("icon.png");
 * ```
 */
export async function getBytes(key: string): Promise<Uint8Array | null> {
  const value = (await callCap("kv.get", { key })) as { json?: string; bytes?: Uint8Array } | null;
  return value?.bytes ?? null;
}

/**
 * Stores a JSON value or bytes under `key`.
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * await kv.put("last-city", { name: "Lisbon" });
 * ```
 */
export async function put(key: string, value: unknown): Promise<void> {
  if (value instanceof Uint8Array) await callCap("kv.put", { key, bytes: toBase64(value) });
  else await callCap("kv.put", { key, json: value });
}

/**
 * Deletes `key`; true when it existed.
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * await kv.del("last-city");
 * ```
 */
export async function del(key: string): Promise<boolean> {
  return (await callCap("kv.delete", { key })) === true;
}

/**
 * Keys starting with `prefix` (exactly, case-sensitively), sorted, at most `limit`.
 *
 * @example
 * ```ts
 * import { kv } from "@tether/cap";
 * const cities = await kv.list("city/", 50);
 * ```
 */
export async function list(prefix = "", limit = 100): Promise<string[]> {
  return (await callCap("kv.list", { prefix, limit })) as string[];
}
