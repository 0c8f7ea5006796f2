/**
 * `kv.get/put/delete/list`: per-extension durable storage in the store, with
 * the size quota from the manifest's `[limits] kv_bytes`; `skv.get/put/delete/list`:
 * the same, in the invocation's session only (its id is the broker's, never the
 * jail's), under the same quota. Values are JSON or bytes; the keys live in the
 * home's store, or in a fleet's shared store (`store/kv-storage.ts`).
 * Compare-and-set, `kv.cas` and `skv.cas`, is in kv-cas.ts.
 */
import type * as v from "valibot";
import type { KvSpace, KvValue } from "../store/kv-repository.js";
import type { KvStorage } from "../store/kv-storage.js";
import type { CapReply } from "../base/capability.js";
import type { CallScope } from "./context.js";
import type { Act } from "./pipeline.js";

import type { KvGetArgs, KvListArgs, KvPutArgs } from "../../jail-runtime/wire/kv-args.js";

const denied = (msg: string): CapReply => ({ ok: false, error: { code: "denied", msg } });

/** Which storage a capability reaches: `kv` (the extension's own) or `skv` (its own in this session). */
export type KvFamily = "kv" | "skv";

export async function kvGet(kv: KvStorage, space: KvSpace, args: v.InferOutput<typeof KvGetArgs>): Promise<CapReply> {
  const row = await kv.get(space, args.key);
  if (row === null) return { ok: true, value: null };
  if (row.encoding === "json") return { ok: true, value: { json: row.value.toString("utf8") } };
  return { ok: true, value: { bytes: new Uint8Array(row.value) } };
}

export async function kvPut(
  kv: KvStorage,
  space: KvSpace,
  quota: number,
  args: v.InferOutput<typeof KvPutArgs>,
): Promise<{ reply: CapReply; bytes: number }> {
  const family: KvFamily = space.session === null ? "kv" : "skv";
  let entry: KvValue;
  if ("json" in args) {
    const text = JSON.stringify(args.json);
    if (text === undefined) return { reply: denied(`${family}.put: the value is not JSON`), bytes: 0 };
    entry = { value: Buffer.from(text, "utf8"), encoding: "json" };
  } else {
    entry = { value: Buffer.from(args.bytes, "base64"), encoding: "bytes" };
  }
  const put = await kv.put(space, args.key, entry, quota);
  if (!put.written)
    return {
      reply: denied(
        `${family}.put: storage quota of ${quota} bytes would be exceeded (${put.after} bytes) (rule: limits.kv_bytes)`,
      ),
      bytes: entry.value.length,
    };
  return { reply: { ok: true, value: null }, bytes: entry.value.length };
}

export async function kvDelete(
  kv: KvStorage,
  space: KvSpace,
  args: v.InferOutput<typeof KvGetArgs>,
): Promise<CapReply> {
  return { ok: true, value: await kv.delete(space, args.key) };
}

export async function kvList(kv: KvStorage, space: KvSpace, args: v.InferOutput<typeof KvListArgs>): Promise<CapReply> {
  return { ok: true, value: await kv.list(space, args.prefix, args.limit) };
}

/** The calling extension's keys: its own, or its own in the invocation's session. */
export const spaceOf = (scope: CallScope, family: KvFamily): KvSpace => ({
  extension: scope.info.extension,
  session: family === "skv" ? scope.ctx.sessionId : null,
});

/**
 * `get`, `delete`, `list`: nothing to judge beyond the token (each extension
 * has its own keys); the hooks see the key or prefix.
 */
function unjudgedAct(family: KvFamily, target: string, run: () => Promise<CapReply>): Act<null> {
  return {
    judge: () => null,
    shown: () => ({ target }),
    perform: async () => ({ reply: await run(), decision: "allowed", rule: `builtin:${family}`, target }),
  };
}

export const kvGetAct =
  (family: KvFamily) =>
  (scope: CallScope, args: v.InferOutput<typeof KvGetArgs>): Act<null> =>
    unjudgedAct(family, args.key, () => kvGet(scope.env.kv(), spaceOf(scope, family), args));

export const kvDeleteAct =
  (family: KvFamily) =>
  (scope: CallScope, args: v.InferOutput<typeof KvGetArgs>): Act<null> =>
    unjudgedAct(family, args.key, () => kvDelete(scope.env.kv(), spaceOf(scope, family), args));

export const kvListAct =
  (family: KvFamily) =>
  (scope: CallScope, args: v.InferOutput<typeof KvListArgs>): Act<null> =>
    unjudgedAct(family, args.prefix, () => kvList(scope.env.kv(), spaceOf(scope, family), args));

/** `put`: the quota is the policy, judged when the value is written (it depends on what is stored then). */
export const kvPutAct =
  (family: KvFamily) =>
  (scope: CallScope, args: v.InferOutput<typeof KvPutArgs>): Act<null> => ({
    judge: () => null,
    shown: () => ({ target: args.key }),
    perform: async () => {
      const { reply, bytes } = await kvPut(
        scope.env.kv(),
        spaceOf(scope, family),
        scope.ctx.grants().limits.kv_bytes,
        args,
      );
      return {
        reply,
        decision: reply.ok ? "allowed" : "denied",
        rule: reply.ok ? `builtin:${family}` : "limits.kv_bytes",
        target: args.key,
        bytes,
      };
    },
  });
