/**
 * What travels between the broker and an extension's database process
 * (db-processes.ts, db-child.ts): one JSON line each way. Bytes (a BLOB
 * parameter or value) travel as `{ $bytes: base64 }`.
 */
import * as v from "valibot";
import type { DbResult, SqlParams, SqlValue } from "./ext-db.js";

export interface DbRequest {
  readonly id: number;
  readonly home: string;
  readonly extension: string;
  readonly maxBytes: number;
  /** `explain`: the tables it would touch, without running it (what hooks are shown). */
  readonly mode: "query" | "exec" | "explain";
  readonly sql: string;
  readonly params?: unknown;
  /** Skip the allowlist: the escape suite only (DbProcesses.runUnchecked). */
  readonly unchecked?: boolean;
}

export interface DbResponse {
  readonly id: number;
  readonly result: unknown;
}

const isBytes = (x: unknown): x is { $bytes: string } =>
  typeof x === "object" &&
  x !== null &&
  !Array.isArray(x) &&
  Object.keys(x).length === 1 &&
  typeof (x as { $bytes?: unknown }).$bytes === "string";

/**
 * A value (params, rows) with its bytes written as `{ $bytes: base64 }`. A key of the
 * value's own that starts with `$` (a column named `$bytes`) gets one more `$`, so no
 * row can pose as bytes.
 */
export function encodeValue(x: unknown): unknown {
  if (x instanceof Uint8Array) return { $bytes: Buffer.from(x).toString("base64") };
  if (Array.isArray(x)) return x.map(encodeValue);
  if (typeof x === "object" && x !== null)
    return Object.fromEntries(Object.entries(x).map(([k, val]) => [k.startsWith("$") ? `$${k}` : k, encodeValue(val)]));
  return x;
}

/** The reverse of encodeValue. */
export function decodeValue(x: unknown): unknown {
  if (isBytes(x)) return new Uint8Array(Buffer.from(x.$bytes, "base64"));
  if (Array.isArray(x)) return x.map(decodeValue);
  if (typeof x === "object" && x !== null)
    return Object.fromEntries(
      Object.entries(x).map(([k, val]) => [k.startsWith("$") ? k.slice(1) : k, decodeValue(val)]),
    );
  return x;
}

/** One answer line from a database jail: its word is checked like any other input. */
export const DbResponseSchema = v.object({
  id: v.number(),
  result: v.variant("ok", [
    v.object({ ok: v.literal(true), kind: v.string(), table: v.string(), value: v.unknown(), bytes: v.number() }),
    v.object({ ok: v.literal(false), kind: v.string(), table: v.string(), rule: v.string(), msg: v.string() }),
  ]),
});

/**
 * The longest answer line read from a database jail (a reply
 * is at most 1 MiB of rows; base64 and JSON escapes grow it).
 */
export const DB_LINE_BYTES = 8 * 1024 * 1024;

export const decodeParams = (x: unknown): SqlParams | undefined =>
  x === undefined ? undefined : (decodeValue(x) as SqlParams);
export const decodeResult = (x: unknown): DbResult => decodeValue(x) as DbResult;
export type { SqlValue };
