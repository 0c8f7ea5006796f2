/**
 * The params of each method this server answers, as valibot schemas that
 * mirror the SDK's zod ones (types.js) for every member the server reads:
 * a request whose params fail its method's schema is -32602 naming the
 * member (engine.ts). Each is a whole `{ params }` so an issue's path reads
 * `params.name`, as the SDK's does.
 */
import * as v from "valibot";
import { isPlainObject, objectOf, PlainObject, ProgressToken, RequestId, RequestMeta } from "./messages.js";

/** MCP's logging levels, least severe first (the order `logging/setLevel` compares by). */
export const LOGGING_LEVELS = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
] as const;
export type LoggingLevel = (typeof LOGGING_LEVELS)[number];

const meta = { _meta: v.optional(RequestMeta) };

/**
 * Arguments by name (an object, not an array), each value `value`'s, every
 * member kept as the client sent it but `__proto__` (the SDK's zod drops it
 * too). Not valibot's `record`: it drops `constructor` and `prototype` as
 * well, unchecked, and with them a tool's or a prompt's argument of that name.
 */
function argumentsOf<const T extends v.GenericSchema>(value: T) {
  return v.pipe(
    PlainObject,
    v.rawCheck(({ dataset, addIssue }) => {
      const input = dataset.value;
      if (!isPlainObject(input)) return;
      for (const key of Object.keys(input)) {
        const parsed = v.safeParse(value, input[key]);
        if (!parsed.success)
          addIssue({
            message: parsed.issues[0].message,
            path: [{ type: "object", origin: "value", input, key, value: input[key] }],
          });
      }
    }),
    v.transform((input) => {
      const members: Record<string, v.InferOutput<T>> = {};
      // Defined, not assigned: a key never reaches a setter (`__proto__`'s is left out anyway).
      for (const key of Object.keys(input))
        if (key !== "__proto__")
          Object.defineProperty(members, key, {
            value: input[key],
            enumerable: true,
            writable: true,
            configurable: true,
          });
      return members;
    }),
  );
}
/** A map of strings (prompt arguments). */
const StringRecord = argumentsOf(v.string());

/** Params that may be left out (a list's): `{}` then. */
const optionalParams = <const T extends v.ObjectEntries>(entries: T) =>
  v.object({ params: v.optional(objectOf({ ...meta, ...entries }), {}) });
const params = <const T extends v.ObjectEntries>(entries: T) => v.object({ params: objectOf({ ...meta, ...entries }) });

const Paginated = optionalParams({ cursor: v.optional(v.string()) });

export const REQUEST_PARAMS = {
  initialize: params({
    protocolVersion: v.string(),
    capabilities: PlainObject,
    clientInfo: objectOf({ name: v.string(), version: v.string() }),
  }),
  ping: optionalParams({}),
  "logging/setLevel": params({ level: v.picklist(LOGGING_LEVELS) }),
  "tools/list": Paginated,
  "tools/call": params({
    name: v.string(),
    arguments: v.optional(argumentsOf(v.unknown())),
    task: v.optional(objectOf({ ttl: v.optional(v.number()) })),
  }),
  "prompts/list": Paginated,
  "prompts/get": params({ name: v.string(), arguments: v.optional(StringRecord) }),
  "completion/complete": params({
    ref: v.variant("type", [
      v.object({ type: v.literal("ref/prompt"), name: v.string() }),
      v.object({ type: v.literal("ref/resource"), uri: v.string() }),
    ]),
    argument: objectOf({ name: v.string(), value: v.string() }),
    context: v.optional(objectOf({ arguments: v.optional(StringRecord) })),
  }),
  "resources/list": Paginated,
  "resources/templates/list": Paginated,
  "resources/read": params({ uri: v.string() }),
} as const;

export type Method = keyof typeof REQUEST_PARAMS;
export type ParamsOf<M extends Method> = v.InferOutput<(typeof REQUEST_PARAMS)[M]>["params"];

export const isMethod = (method: string): method is Method => Object.hasOwn(REQUEST_PARAMS, method);

/** The notifications a client sends that this server acts on; others are ignored. */
export const NOTIFICATION_PARAMS = {
  "notifications/cancelled": params({ requestId: v.optional(RequestId), reason: v.optional(v.string()) }),
  "notifications/initialized": optionalParams({}),
  "notifications/progress": params({
    progressToken: ProgressToken,
    progress: v.number(),
    total: v.optional(v.number()),
    message: v.optional(v.string()),
  }),
} as const;

export type Notification = keyof typeof NOTIFICATION_PARAMS;
export type NotificationParamsOf<N extends Notification> = v.InferOutput<(typeof NOTIFICATION_PARAMS)[N]>["params"];

export const isNotification = (method: string): method is Notification => Object.hasOwn(NOTIFICATION_PARAMS, method);
