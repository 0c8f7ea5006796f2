/**
 * The arguments of `kv.*` and `skv.*`, read by the broker (broker/caps/kv.ts)
 * and by the test kit's in-memory kv alike, so a call the kit accepts is one
 * the broker accepts, with the same words when it is refused.
 */
import * as v from "valibot";

// No NUL: a fleet keeps keys in PostgreSQL text, which cannot hold one, and a key must mean the same on every broker.
const NoNul = v.check((text: string) => !text.includes("\u0000"), "a key cannot contain NUL (\\u0000)");
const Key = v.pipe(v.string(), v.minLength(1), v.maxLength(512), NoNul);
export const KvGetArgs = v.object({ key: Key });
export const KvPutArgs = v.union([
  v.object({ key: Key, json: v.unknown() }),
  v.object({ key: Key, bytes: v.pipe(v.string(), v.base64()) }),
]);
/** `expected`: the string the caller saw, or null for "no such key"; `value`: the new string, or null to delete. */
export const KvCasArgs = v.object({ key: Key, expected: v.nullable(v.string()), value: v.nullable(v.string()) });
export const KvListArgs = v.object({
  prefix: v.optional(v.pipe(v.string(), v.maxLength(512), NoNul), ""),
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000)), 100),
});

const KEY_RULE = "a key is 1 to 512 characters, without NUL";

/** What each call takes, in the refusal of a malformed one. */
export const kvUsage = (family: "kv" | "skv") => ({
  get: `${family}.get takes {key}; ${KEY_RULE}`,
  delete: `${family}.delete takes {key}; ${KEY_RULE}`,
  list: `${family}.list takes {prefix?, limit?}`,
  put: `${family}.put takes {key, json} or {key, bytes (base64)}; ${KEY_RULE}`,
  cas: `${family}.cas takes {key, expected, value}: expected and value each a string or null; ${KEY_RULE}`,
});
