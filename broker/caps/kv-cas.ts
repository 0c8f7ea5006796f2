/**
 * `kv.cas` and `skv.cas`: compare-and-set of a string value, so that an
 * extension's read-modify-write (a counter, a list it appends to) loses no
 * update when several sessions, satellites or a fleet's hosts write the same
 * key. The storage compares and writes in one transaction
 * (`store/kv-storage.ts`); this file maps the wire's strings to stored values
 * and answers `{ok: true}` or `{ok: false, current}`. Judged and audited as
 * `put`: the quota at the moment of the write, one audit row.
 */
import type * as v from "valibot";
import type { KvCasArgs } from "../../jail-runtime/wire/kv-args.js";
import {
  CAS_STRING_RULE,
  casNotString,
  casOverQuota,
  casString,
  casText,
  type CasAnswer,
} from "../../jail-runtime/wire/kv-cas.js";
import type { CapReply } from "../base/capability.js";
import type { KvSpace, KvValue } from "../store/kv-repository.js";
import type { KvStorage } from "../store/kv-storage.js";
import type { CallScope } from "./context.js";
import { spaceOf, type KvFamily } from "./kv.js";
import type { Act, Performed } from "./pipeline.js";

const stored = (text: string | null): KvValue | null =>
  text === null ? null : { value: Buffer.from(casText(text), "utf8"), encoding: "json" };

/** One cas, and how its audit row reads: the rule that decided and the bytes it wrote. */
export async function kvCas(
  kv: KvStorage,
  space: KvSpace,
  quota: number,
  args: v.InferOutput<typeof KvCasArgs>,
): Promise<{ reply: CapReply; rule: string | null; bytes: number }> {
  const family: KvFamily = space.session === null ? "kv" : "skv";
  const next = stored(args.value);
  const bytes = next?.value.length ?? 0;
  const done = await kv.cas(space, args.key, stored(args.expected), next, quota);
  if (done.result === "quota")
    return {
      reply: denied(`${casOverQuota(family, quota, done.after)} (rule: limits.kv_bytes)`),
      rule: "limits.kv_bytes",
      bytes,
    };
  if (done.result === "swapped") return { reply: answer({ ok: true }), rule: null, bytes };
  const current = done.current;
  if (current === null) return { reply: answer({ ok: false, current: null }), rule: null, bytes: 0 };
  const text = current.encoding === "json" ? casString(current.value.toString("utf8")) : undefined;
  if (text === undefined)
    return {
      reply: denied(`${casNotString(family, current.encoding)} (rule: ${CAS_STRING_RULE})`),
      rule: CAS_STRING_RULE,
      bytes: 0,
    };
  return { reply: answer({ ok: false, current: text }), rule: null, bytes: 0 };
}

const answer = (value: CasAnswer): CapReply => ({ ok: true, value });
const denied = (msg: string): CapReply => ({ ok: false, error: { code: "denied", msg } });

/** As `put`: nothing to judge before the write (the quota depends on what is stored then); the hooks see the key. */
export const kvCasAct =
  (family: KvFamily) =>
  (scope: CallScope, args: v.InferOutput<typeof KvCasArgs>): Act<null> => ({
    judge: () => null,
    shown: () => ({ target: args.key }),
    perform: async (): Promise<Performed> => {
      const { reply, rule, bytes } = await kvCas(
        scope.env.kv(),
        spaceOf(scope, family),
        scope.ctx.grants().limits.kv_bytes,
        args,
      );
      return {
        reply,
        decision: rule === null ? "allowed" : "denied",
        rule: rule ?? `builtin:${family}`,
        target: args.key,
        bytes,
      };
    },
  });
