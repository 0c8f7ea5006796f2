/**
 * `db.query` and `db.exec`: the extension's own SQLite database
 * (`[storage]`, broker/storage/ext-db.ts). The approval's quota is read for
 * every call; the statement is checked against the allowlist before it runs
 * (broker/storage/sql-allowlist.ts). The audit row and the `cap_call` hooks
 * see the statement's kind and the tables SQLite itself says it reads or
 * writes (its program, triggers included: ext-db.ts statementTables), never
 * its values.
 */
import * as v from "valibot";
import type { CapReply } from "../base/capability.js";
import { checkStatement } from "../store/sql-allowlist.js";
import type { DbResult, SqlParams } from "../store/ext-db.js";
import type { CallScope } from "./context.js";
import type { Act } from "./pipeline.js";

const MAX_SQL = 16_384;
const MAX_TEXT = 1_048_576;
const Value = v.union([
  v.null(),
  v.pipe(v.number(), v.finite()),
  v.pipe(v.string(), v.maxLength(MAX_TEXT)),
  v.boolean(),
  v.object({ bytes: v.pipe(v.string(), v.maxLength(Math.ceil((MAX_TEXT * 4) / 3) + 4), v.base64()) }),
]);
const Params = v.union([
  v.pipe(v.array(Value), v.maxLength(256)),
  v.pipe(
    v.record(v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/)), Value),
    v.check((r) => Object.keys(r).length <= 256, "at most 256 named parameters"),
  ),
]);
export const DbArgs = v.object({
  sql: v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_SQL)),
  params: v.optional(Params),
});

type Value = v.InferOutput<typeof Value>;
const toSql = (x: Value): null | number | string | Uint8Array =>
  x === null || typeof x === "number" || typeof x === "string"
    ? x
    : typeof x === "boolean"
      ? x
        ? 1
        : 0
      : new Uint8Array(Buffer.from(x.bytes, "base64"));

function sqlParams(params: v.InferOutput<typeof Params> | undefined): SqlParams | undefined {
  if (params === undefined) return undefined;
  if (Array.isArray(params)) return params.map(toSql);
  return Object.fromEntries(Object.entries(params).map(([k, x]) => [k, toSql(x)]));
}

/** The statement's kind and table, as audited: `select notes`, `create table notes`. */
const targetOf = (r: DbResult): string => `${r.kind}${r.table === "" ? "" : ` ${r.table}`}`;

export const dbAct =
  (mode: "query" | "exec") =>
  (scope: CallScope, args: v.InferOutput<typeof DbArgs>): Act<string> => {
    // The text's reading, until SQLite has named the tables (and where it cannot: no database, a refusal).
    const check = checkStatement(args.sql);
    const textKind = check.ok ? `${check.kind}${check.table === "" ? "" : ` ${check.table}`}` : "refused";
    return {
      // The hooks see what the audit row will name: SQLite's own tables for it, found without running it.
      judge: async () => {
        const storage = scope.ctx.grants().storage;
        if (storage === null || !check.ok) return textKind;
        const r = await scope.env.dbs.explain(
          scope.info.extension,
          storage.max_bytes,
          args.sql,
          sqlParams(args.params),
          scope.ctx.deadlineAt,
        );
        return r.ok ? targetOf(r) : textKind;
      },
      shown: (target) => ({ target }),
      // The audit row names what the hooks were shown: SQLite's tables, found once, in judge.
      perform: async (target) => {
        const storage = scope.ctx.grants().storage;
        if (storage === null) {
          const reply: CapReply = {
            ok: false,
            error: {
              code: "denied",
              msg:
                `db.${mode}: this extension has no approved database; declare [storage] in its manifest and ` +
                `approve it (tether review, tether approve) (rule: storage)`,
            },
          };
          return { reply, decision: "denied", rule: "storage", target };
        }
        const r = await scope.env.dbs.run(
          scope.info.extension,
          storage.max_bytes,
          mode,
          args.sql,
          sqlParams(args.params),
          scope.ctx.deadlineAt,
        );
        if (!r.ok)
          return {
            reply: { ok: false, error: { code: "denied", msg: `${r.msg} (rule: ${r.rule})` } },
            decision: "denied",
            rule: r.rule,
            target,
          };
        return { reply: { ok: true, value: r.value }, decision: "allowed", rule: "builtin:db", target, bytes: r.bytes };
      },
    };
  };
