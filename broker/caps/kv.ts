/**
 * `kv.get/put/delete/list`: per-extension durable storage in the store, with
 * the size quota from the manifest's `[limits] kv_bytes`. Values are JSON or bytes.
 */
import type { Statement } from "better-sqlite3";
import { and, eq, sql } from "drizzle-orm";
import * as v from "valibot";
import type { Store } from "../store/open.js";
import { kv } from "../store/schema.js";
import type { CapReply } from "../satellite/process.js";
import type { CallScope } from "./context.js";
import type { Act } from "./pipeline.js";

const Key = v.pipe(v.string(), v.minLength(1), v.maxLength(512));
export const KvGetArgs = v.object({ key: Key });
export const KvPutArgs = v.union([v.object({ key: Key, json: v.unknown() }), v.object({ key: Key, bytes: v.pipe(v.string(), v.base64()) })]);
export const KvListArgs = v.object({ prefix: v.optional(v.pipe(v.string(), v.maxLength(512)), ""), limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000)), 100) });

const denied = (msg: string): CapReply => ({ ok: false, error: { code: "denied", msg } });

/** Statements prepared once per store: kv calls sit on the capability hot path. */
interface KvStatements {
  readonly get: Statement<[string, string], { value: Buffer; encoding: string }>;
  readonly usedExcept: Statement<[string, string], { n: number }>;
}
const prepared = new WeakMap<Store, KvStatements>();

function statements(store: Store): KvStatements {
  let s = prepared.get(store);
  if (s === undefined) {
    s = {
      get: store.sqlite.prepare("select value, encoding from kv where extension = ? and key = ?"),
      usedExcept: store.sqlite.prepare("select coalesce(sum(length(value) + length(cast(key as blob))), 0) as n from kv where extension = ? and key <> ?"),
    };
    prepared.set(store, s);
  }
  return s;
}

/** Bytes `extension` stores under every key but `exceptKey` (keys count by their UTF-8 length). */
function used(store: Store, extension: string, exceptKey: string): number {
  return statements(store).usedExcept.get(extension, exceptKey)?.n ?? 0;
}

export function kvGet(store: Store, extension: string, args: v.InferOutput<typeof KvGetArgs>): CapReply {
  const row = statements(store).get.get(extension, args.key);
  if (row === undefined) return { ok: true, value: null };
  if (row.encoding === "json") return { ok: true, value: { json: row.value.toString("utf8") } };
  return { ok: true, value: { bytes: new Uint8Array(row.value) } };
}

export function kvPut(store: Store, extension: string, quota: number, args: v.InferOutput<typeof KvPutArgs>): { reply: CapReply; bytes: number } {
  let value: Buffer;
  let encoding: "json" | "bytes";
  if ("json" in args) {
    const text = JSON.stringify(args.json);
    if (text === undefined) return { reply: denied("kv.put: the value is not JSON"), bytes: 0 };
    value = Buffer.from(text, "utf8");
    encoding = "json";
  } else {
    value = Buffer.from(args.bytes, "base64");
    encoding = "bytes";
  }
  const after = used(store, extension, args.key) + value.length + Buffer.byteLength(args.key);
  if (after > quota) return { reply: denied(`kv.put: storage quota of ${quota} bytes would be exceeded (${after} bytes) (rule: limits.kv_bytes)`), bytes: value.length };
  store.orm
    .insert(kv)
    .values({ extension, key: args.key, value, encoding, updatedAt: Date.now() })
    .onConflictDoUpdate({ target: [kv.extension, kv.key], set: { value, encoding, updatedAt: Date.now() } })
    .run();
  return { reply: { ok: true, value: null }, bytes: value.length };
}

export function kvDelete(store: Store, extension: string, args: v.InferOutput<typeof KvGetArgs>): CapReply {
  const r = store.orm.delete(kv).where(and(eq(kv.extension, extension), eq(kv.key, args.key))).run();
  return { ok: true, value: r.changes > 0 };
}

export function kvList(store: Store, extension: string, args: v.InferOutput<typeof KvListArgs>): CapReply {
  // An exact, case-sensitive prefix: LIKE would treat % and _ as wildcards and fold ASCII case.
  const rows = store.orm
    .select({ key: kv.key })
    .from(kv)
    .where(and(eq(kv.extension, extension), sql`substr(cast(${kv.key} as blob), 1, ${Buffer.byteLength(args.prefix)}) = cast(${args.prefix} as blob)`))
    .orderBy(kv.key)
    .limit(args.limit)
    .all();
  return { ok: true, value: rows.map((r) => r.key) };
}

/** `kv.get`: nothing to judge beyond the token (each extension has its own keys); the hooks see the key. */
export function kvGetAct(scope: CallScope, args: v.InferOutput<typeof KvGetArgs>): Act<null> {
  return {
    judge: () => null,
    shown: () => ({ target: args.key }),
    perform: () => ({ reply: kvGet(scope.env.store, scope.info.extension, args), decision: "allowed", rule: "builtin:kv", target: args.key }),
  };
}

export function kvDeleteAct(scope: CallScope, args: v.InferOutput<typeof KvGetArgs>): Act<null> {
  return {
    judge: () => null,
    shown: () => ({ target: args.key }),
    perform: () => ({ reply: kvDelete(scope.env.store, scope.info.extension, args), decision: "allowed", rule: "builtin:kv", target: args.key }),
  };
}

export function kvListAct(scope: CallScope, args: v.InferOutput<typeof KvListArgs>): Act<null> {
  return {
    judge: () => null,
    shown: () => ({ target: args.prefix }),
    perform: () => ({ reply: kvList(scope.env.store, scope.info.extension, args), decision: "allowed", rule: "builtin:kv", target: args.prefix }),
  };
}

/** `kv.put`: the quota is the policy, judged when the value is written (it depends on what is stored then). */
export function kvPutAct(scope: CallScope, args: v.InferOutput<typeof KvPutArgs>): Act<null> {
  return {
    judge: () => null,
    shown: () => ({ target: args.key }),
    perform: () => {
      const { reply, bytes } = kvPut(scope.env.store, scope.info.extension, scope.ctx.grants().limits.kv_bytes, args);
      return { reply, decision: reply.ok ? "allowed" : "denied", rule: reply.ok ? "builtin:kv" : "limits.kv_bytes", target: args.key, bytes };
    },
  };
}
