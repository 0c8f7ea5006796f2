/**
 * The calls of a key-value family — `kv` (the extension's own keys) and `skv`
 * (its keys in the current session) — written once: the two differ only in
 * the capability names the broker judges.
 */
import { callCap } from "./invocation.js";
import { toBase64 } from "./base64.js";
import { jsonParse } from "./intrinsics.js";

type Stored = { json?: string; bytes?: Uint8Array } | null;

export interface KvCalls {
  get(key: string): Promise<unknown>;
  getBytes(key: string): Promise<Uint8Array | null>;
  put(key: string, value: unknown): Promise<void>;
  del(key: string): Promise<boolean>;
  list(prefix?: string, limit?: number): Promise<string[]>;
}

export function kvCalls(family: "kv" | "skv"): KvCalls {
  return {
    async get(key) {
      const value = (await callCap(`${family}.get`, { key })) as Stored;
      if (value === null || value.json === undefined) return null;
      return jsonParse(value.json);
    },
    async getBytes(key) {
      const value = (await callCap(`${family}.get`, { key })) as Stored;
      return value?.bytes ?? null;
    },
    async put(key, value) {
      if (value instanceof Uint8Array) await callCap(`${family}.put`, { key, bytes: toBase64(value) });
      else await callCap(`${family}.put`, { key, json: value });
    },
    async del(key) {
      return (await callCap(`${family}.delete`, { key })) === true;
    },
    async list(prefix = "", limit = 100) {
      return (await callCap(`${family}.list`, { prefix, limit })) as string[];
    },
  };
}
