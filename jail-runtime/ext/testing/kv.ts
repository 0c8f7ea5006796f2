/**
 * An in-memory `kv` for tests: the broker's answers to `kv.get`, `kv.put`,
 * `kv.cas`, `kv.delete` and `kv.list` (broker/caps/kv.ts, kv-cas.ts), its
 * quota and key order, with no store behind it — and the same for `skv.*`,
 * the keys of the one session a test runs in, counted under the same quota.
 */
import * as v from "valibot";
import type { CapReply } from "./reply.js";
import { refused } from "./reply.js";
import { KvCasArgs, KvGetArgs, KvListArgs, KvPutArgs, kvUsage } from "../../wire/kv-args.js";
import { CAS_STRING_RULE, casNotString, casOverQuota, casString, casText } from "../../wire/kv-cas.js";

/** The broker's default `[limits] kv_bytes`. */
export const DEFAULT_KV_BYTES = 1_048_576;

type Stored = { readonly json: string } | { readonly bytes: Uint8Array };

const utf8 = new TextEncoder();

/** The store orders keys by their UTF-8 bytes (SQLite's binary collation), not by UTF-16 units. */
function byBytes(a: string, b: string): number {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** `kv`: the extension's own keys; `skv`: its keys in the test's session. */
export type KvFamily = "kv" | "skv";

function size(value: Stored): number {
  return "json" in value ? utf8.encode(value.json).length : value.bytes.length;
}

/**
 * One extension's keys, in memory, bounded like `[limits] kv_bytes` (every
 * value's bytes plus its key's UTF-8 length).
 *
 * @example
 * ```ts
 * import { FakeKv } from "@tether/ext/testing";
 * const kv = new FakeKv({ "last-city": "Lisbon" }, 4096);
 * kv.value("last-city"); // "Lisbon"
 * ```
 */
export class FakeKv {
  readonly #spaces: Record<KvFamily, Map<string, Stored>> = { kv: new Map(), skv: new Map() };

  /** `entries` are stored as JSON values (a `Uint8Array` as bytes), past any quota. */
  constructor(
    entries: Readonly<Record<string, unknown>> = {},
    readonly quota: number = DEFAULT_KV_BYTES,
  ) {
    for (const [key, value] of Object.entries(entries)) this.set(key, value);
  }

  /** Stores `value` as a test's setup would, with no quota check (`skv`: in the session's keys). */
  set(key: string, value: unknown, family: KvFamily = "kv"): void {
    this.#spaces[family].set(
      key,
      value instanceof Uint8Array ? { bytes: value.slice() } : { json: JSON.stringify(value) ?? "null" },
    );
  }

  /** The JSON value under `key` (undefined when absent, the bytes when it holds bytes): for assertions. */
  value(key: string, family: KvFamily = "kv"): unknown {
    const stored = this.#spaces[family].get(key);
    if (stored === undefined) return undefined;
    return "json" in stored ? JSON.parse(stored.json) : stored.bytes.slice();
  }

  /** Every key, in the store's order. */
  keys(family: KvFamily = "kv"): string[] {
    return [...this.#spaces[family].keys()].sort(byBytes);
  }

  /** The bytes counted against the quota (`kv` and `skv` together). */
  used(): number {
    let total = 0;
    for (const space of Object.values(this.#spaces))
      for (const [key, value] of space) total += size(value) + utf8.encode(key).length;
    return total;
  }

  /** As the broker's storage: compare the stored JSON text, then judge the quota as a put would, then write. */
  #cas(family: KvFamily, args: v.InferOutput<typeof KvCasArgs>): CapReply {
    const entries = this.#spaces[family];
    const { key } = args;
    const current = entries.get(key);
    const matches =
      current === undefined
        ? args.expected === null
        : "json" in current && args.expected !== null && current.json === casText(args.expected);
    if (!matches) {
      if (current === undefined) return { ok: true, value: { ok: false, current: null } };
      const text = "json" in current ? casString(current.json) : undefined;
      if (text === undefined)
        return refused("denied", CAS_STRING_RULE, casNotString(family, "json" in current ? "json" : "bytes"));
      return { ok: true, value: { ok: false, current: text } };
    }
    if (args.value === null) {
      entries.delete(key);
      return { ok: true, value: { ok: true } };
    }
    const entry: Stored = { json: casText(args.value) };
    const keyBytes = utf8.encode(key).length;
    const after = this.used() - (current === undefined ? 0 : size(current) + keyBytes) + size(entry) + keyBytes;
    if (after > this.quota) return refused("denied", "limits.kv_bytes", casOverQuota(family, this.quota, after));
    entries.set(key, entry);
    return { ok: true, value: { ok: true } };
  }

  /** Answers one `kv.*` or `skv.*` capability call (decoded arguments) as the broker does. */
  serve(cap: string, args: unknown): CapReply {
    const dot = cap.indexOf(".");
    const family = cap.slice(0, dot);
    if (family !== "kv" && family !== "skv")
      return refused("denied", "unknown-capability", `There is no capability '${cap.slice(0, 64)}'`);
    const entries = this.#spaces[family];
    switch (cap.slice(dot + 1)) {
      case "get": {
        const parsed = v.safeParse(KvGetArgs, args);
        if (!parsed.success) return refused("bad_arguments", "args", kvUsage(family).get);
        const stored = entries.get(parsed.output.key);
        if (stored === undefined) return { ok: true, value: null };
        return { ok: true, value: "json" in stored ? { json: stored.json } : { bytes: stored.bytes.slice() } };
      }
      case "delete": {
        const parsed = v.safeParse(KvGetArgs, args);
        if (!parsed.success) return refused("bad_arguments", "args", kvUsage(family).delete);
        return { ok: true, value: entries.delete(parsed.output.key) };
      }
      case "list": {
        const parsed = v.safeParse(KvListArgs, args);
        if (!parsed.success) return refused("bad_arguments", "args", kvUsage(family).list);
        const { prefix, limit } = parsed.output;
        return {
          ok: true,
          value: this.keys(family)
            .filter((key) => key.startsWith(prefix))
            .slice(0, limit),
        };
      }
      case "put": {
        const parsed = v.safeParse(KvPutArgs, args);
        if (!parsed.success) return refused("bad_arguments", "args", kvUsage(family).put);
        const { key } = parsed.output;
        let entry: Stored;
        if ("json" in parsed.output) {
          const text = JSON.stringify(parsed.output.json);
          if (text === undefined)
            return { ok: false, error: { code: "denied", msg: `${family}.put: the value is not JSON` } };
          entry = { json: text };
        } else {
          entry = { bytes: fromBase64(parsed.output.bytes) };
        }
        const old = entries.get(key);
        const after =
          this.used() -
          (old === undefined ? 0 : size(old) + utf8.encode(key).length) +
          size(entry) +
          utf8.encode(key).length;
        if (after > this.quota)
          return refused(
            "denied",
            "limits.kv_bytes",
            `${family}.put: storage quota of ${this.quota} bytes would be exceeded (${after} bytes)`,
          );
        entries.set(key, entry);
        return { ok: true, value: null };
      }
      case "cas": {
        const parsed = v.safeParse(KvCasArgs, args);
        if (!parsed.success) return refused("bad_arguments", "args", kvUsage(family).cas);
        return this.#cas(family, parsed.output);
      }
      default:
        return refused("denied", "unknown-capability", `There is no capability '${cap.slice(0, 64)}'`);
    }
  }
}
