/**
 * `skv`: the extension's durable storage in the current session only — what
 * one session keeps (a managed extension's state) is apart from every other
 * session's. The broker knows the session of each invocation; nothing here
 * names it. Counted with `kv` against the manifest's `[limits] kv_bytes`.
 */
import { callCap } from "./invocation.js";
import { toBase64 } from "./base64.js";
import { jsonParse } from "./intrinsics.js";

/**
 * Reads a JSON value (or null when the key is absent or holds bytes).
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * const plan = await skv.get("plan");
 * ```
 */
export async function get(key: string): Promise<unknown> {
  const value = (await callCap("skv.get", { key })) as { json?: string; bytes?: Uint8Array } | null;
  if (value === null || value.json === undefined) return null;
  return jsonParse(value.json);
}

/**
 * Reads bytes (or null when the key is absent or holds JSON).
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * const draft = await skv.getBytes("draft.bin");
 * ```
 */
export async function getBytes(key: string): Promise<Uint8Array | null> {
  const value = (await callCap("skv.get", { key })) as { json?: string; bytes?: Uint8Array } | null;
  return value?.bytes ?? null;
}

/**
 * Stores a JSON value or bytes under `key`.
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * await skv.put("plan", { step: 1 });
 * ```
 */
export async function put(key: string, value: unknown): Promise<void> {
  if (value instanceof Uint8Array) await callCap("skv.put", { key, bytes: toBase64(value) });
  else await callCap("skv.put", { key, json: value });
}

/**
 * Deletes `key`; true when it existed.
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * await skv.del("plan");
 * ```
 */
export async function del(key: string): Promise<boolean> {
  return (await callCap("skv.delete", { key })) === true;
}

/**
 * Keys starting with `prefix` (exactly, case-sensitively), sorted, at most `limit`.
 *
 * @example
 * ```ts
 * import { skv } from "@tether/cap";
 * const notes = await skv.list("note/", 50);
 * ```
 */
export async function list(prefix = "", limit = 100): Promise<string[]> {
  return (await callCap("skv.list", { prefix, limit })) as string[];
}
