/**
 * The JSON-RPC 2.0 messages an MCP client sends, as valibot schemas that
 * mirror the SDK's zod ones (types.js): each kind a strict object (an unknown
 * top-level member makes it no message at all), ids a string or a safe
 * integer, `params` an object when present. A message is classified by its
 * members first, so only one schema runs on it.
 */
import * as v from "valibot";

/** A JSON object (not an array: valibot's `object` lets arrays through, zod's does not). */
export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A JSON object, as a schema (arrays refused). */
export const PlainObject = v.custom<Record<string, unknown>>(isPlainObject, "Invalid type: Expected Object");

/** `schema`, refusing arrays first. */
export function objectOf<const TEntries extends v.ObjectEntries>(entries: TEntries) {
  return v.pipe(PlainObject, v.object(entries));
}

export const RequestId = v.union([v.string(), v.pipe(v.number(), v.safeInteger())]);
export type RequestId = v.InferOutput<typeof RequestId>;

export const ProgressToken = RequestId;

/** A request's `_meta`: what the server reads of it is the progress token; the rest is kept. */
export const RequestMeta = v.pipe(PlainObject, v.looseObject({ progressToken: v.optional(ProgressToken) }));

/** Any request's or notification's params: an object, `_meta` checked, the method's own members left to it. */
const BaseParams = v.pipe(PlainObject, v.looseObject({ _meta: v.optional(RequestMeta) }));

const JSONRPC = v.literal("2.0");

export const JsonRpcRequest = v.strictObject({
  jsonrpc: JSONRPC,
  id: RequestId,
  method: v.string(),
  params: v.optional(BaseParams),
});
export type JsonRpcRequest = v.InferOutput<typeof JsonRpcRequest>;

export const JsonRpcNotification = v.strictObject({
  jsonrpc: JSONRPC,
  method: v.string(),
  params: v.optional(BaseParams),
});
export type JsonRpcNotification = v.InferOutput<typeof JsonRpcNotification>;

const JsonRpcResult = v.strictObject({
  jsonrpc: JSONRPC,
  id: RequestId,
  result: v.pipe(PlainObject, v.looseObject({})),
});

const JsonRpcError = v.strictObject({
  jsonrpc: JSONRPC,
  id: v.optional(RequestId),
  error: v.object({ code: v.pipe(v.number(), v.integer()), message: v.string(), data: v.optional(v.unknown()) }),
});

export type Incoming =
  | { readonly kind: "request"; readonly message: JsonRpcRequest }
  | { readonly kind: "notification"; readonly message: JsonRpcNotification }
  | { readonly kind: "response"; readonly id: RequestId | undefined }
  | { readonly kind: "invalid"; readonly issues: readonly v.BaseIssue<unknown>[] | null };

/** What `message` is: a request, a notification, a response (to a request this server never sent), or none. */
export function classify(message: unknown): Incoming {
  if (!isPlainObject(message)) return { kind: "invalid", issues: null };
  if ("method" in message) {
    if ("id" in message) {
      const parsed = v.safeParse(JsonRpcRequest, message);
      return parsed.success ? { kind: "request", message: parsed.output } : { kind: "invalid", issues: parsed.issues };
    }
    const parsed = v.safeParse(JsonRpcNotification, message);
    return parsed.success
      ? { kind: "notification", message: parsed.output }
      : { kind: "invalid", issues: parsed.issues };
  }
  const parsed = "result" in message ? v.safeParse(JsonRpcResult, message) : v.safeParse(JsonRpcError, message);
  return parsed.success ? { kind: "response", id: parsed.output.id } : { kind: "invalid", issues: parsed.issues };
}
