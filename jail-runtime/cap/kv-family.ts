/**
 * The calls of a key-value family — `kv` (the extension's own keys) and `skv`
 * (its keys in the current session) — written once: the two differ only in
 * the capability names the broker judges.
 */
import { callCap } from "./invocation.js";
import { toBase64 } from "./base64.js";
import { jsonParse } from "./intrinsics.js";

type Stored = { json?: string; bytes?: Uint8Array } | null;

/** What a cas answers: it swapped, or the key held `current` (null: no value) and nothing changed. */
export type CasResult = { ok: true } | { ok: false; current: string | null };

export interface KvCalls {
  get(key: string): Promise<unknown>;
  getBytes(key: string): Promise<Uint8Array | null>;
  put(key: string, value: unknown): Promise<void>;
  cas(key: string, expected: string | null, value: string | null): Promise<CasResult>;
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
    async cas(key, expected, value) {
      // An undefined expected or value is dropped from the JSON and refused by the broker
      // (bad_arguments): never read as null.
      const answer = (await callCap(`${family}.cas`, { key, expected, value })) as CasResult;
      return answer.ok ? { ok: true } : { ok: false, current: answer.current };
    },
    async del(key) {
      return (await callCap(`${family}.delete`, { key })) === true;
    },
    async list(prefix = "", limit = 100) {
      return (await callCap(`${family}.list`, { prefix, limit })) as string[];
    },
  };
}
