/**
 * What travels between the broker and an extension's database process
 * (db-processes.ts, db-child.ts): one JSON line each way. Bytes (a BLOB
 * parameter or value) travel as `{ $bytes: base64 }`.
 */
import type { DbResult, SqlParams, SqlValue } from "./ext-db.js";

export interface DbRequest {
  readonly id: number;
  readonly home: string;
  readonly extension: string;
  readonly maxBytes: number;
  readonly mode: "query" | "exec";
  readonly sql: string;
  readonly params?: unknown;
  /** Skip the allowlist: the escape suite only (DbProcesses.runUnchecked). */
  readonly unchecked?: boolean;
}

export interface DbResponse {
  readonly id: number;
  readonly result: unknown;
}

const isBytes = (x: unknown): x is { $bytes: string } => typeof x === "object" && x !== null && typeof (x as { $bytes?: unknown }).$bytes === "string";

/** A value (params, rows) with its bytes written as base64. */
export function encodeValue(x: unknown): unknown {
  if (x instanceof Uint8Array) return { $bytes: Buffer.from(x).toString("base64") };
  if (Array.isArray(x)) return x.map(encodeValue);
  if (typeof x === "object" && x !== null) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, encodeValue(v)]));
  return x;
}

/** The reverse of encodeValue. */
export function decodeValue(x: unknown): unknown {
  if (isBytes(x)) return new Uint8Array(Buffer.from(x.$bytes, "base64"));
  if (Array.isArray(x)) return x.map(decodeValue);
  if (typeof x === "object" && x !== null) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, decodeValue(v)]));
  return x;
}

export const decodeParams = (x: unknown): SqlParams | undefined => (x === undefined ? undefined : (decodeValue(x) as SqlParams));
export const decodeResult = (x: unknown): DbResult => decodeValue(x) as DbResult;
export type { SqlValue };
