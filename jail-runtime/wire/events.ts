/**
 * The hook bus's events: each event's payload and the verdict it may answer,
 * defined once as valibot schemas (issue 5 groundwork). The broker validates
 * every verdict against its event's answer schema; the SDK derives the typed
 * handler for each event from the payload schema.
 *
 * Payloads and verdicts travel as JSON text (see frames.ts).
 */
import * as v from "valibot";
import { ActWithin } from "./act-within.js";

const Text = v.pipe(v.string(), v.maxLength(64 * 1024));
const Notes = v.optional(v.pipe(v.array(v.pipe(v.string(), v.maxLength(4096))), v.maxLength(16)));
const Count = v.pipe(v.number(), v.integer(), v.minValue(0));

/**
 * A judged `net.fetch` hop: the broker's normal forms (host lower case, A-labels, no trailing dot;
 * canonical addresses with their classes).
 */
const CapCallRequest = v.object({
  method: v.string(),
  scheme: v.picklist(["http", "https"]),
  host: v.string(),
  port: Count,
  path: v.string(),
  rule: v.string(),
  addresses: v.array(v.object({ address: v.string(), class: v.string(), ipv4: v.optional(v.string()) })),
});

/** The origin of a `usage` the broker fires for an extension's own model call (`model.complete`). */
const ExtensionOrigin = v.custom<`extension:${string}`>(
  (x) => typeof x === "string" && /^extension:[a-z][a-z0-9_-]{0,63}$/.test(x),
  "expected extension:<name>",
);

/** How much of a route's request a `route_call` hook is shown: the first 64 Ki characters. */
export const MAX_ROUTE_CALL_REQUEST = 64 * 1024;

/** Payloads, one per event. */
export const EventPayloads = {
  session_start: v.object({ session_id: v.string(), workspace: v.string(), source: v.string() }),
  before_agent_start: v.object({ prompt: v.string() }),
  context: v.object({ messages: v.array(v.unknown()) }),
  /** `within`: present when the call is an act an extension reported (./act-within.ts). */
  tool_call: v.object({ tool: v.string(), call_id: v.string(), arguments: v.unknown(), within: ActWithin }),
  tool_result: v.object({
    tool: v.string(),
    call_id: v.string(),
    arguments: v.unknown(),
    ok: v.boolean(),
    result: v.unknown(),
    started_ms: v.number(),
    finished_ms: v.number(),
    within: ActWithin,
  }),
  agent_end: v.object({ reply: v.string(), held: Count }),
  agent_settled: v.object({}),
  /** `reason` is text ("threshold", "overflow", "requested" today), so a new word breaks no extension. */
  before_compact: v.object({ reason: v.string() }),
  /** Notify-only: the committed cost row's numbers and coordinates, nothing else. */
  usage: v.object({
    seq: Count,
    /** The harness's cost rows; `extension:<name>`: a `model.complete` that extension made (the broker fires it). */
    origin: v.union([v.picklist(["provider_reported", "reconciliation"]), ExtensionOrigin]),
    model: v.string(),
    input_tokens: Count,
    output_tokens: Count,
    cost_usd: v.optional(v.number()),
  }),
  /** A capability call made inside an invocation; `within` names that invocation (e.g. "tool:forecast"). */
  cap_call: v.object({
    extension: v.string(),
    capability: v.string(),
    target: v.string(),
    within: v.string(),
    request: v.optional(CapCallRequest),
  }),
  /**
   * The harness calls a host route (`session.route`): which extension, which route, and the
   * request as far as `MAX_ROUTE_CALL_REQUEST` characters (`truncated` says when it was cut).
   */
  route_call: v.object({
    extension: v.string(),
    route: v.string(),
    request: v.pipe(v.string(), v.maxLength(MAX_ROUTE_CALL_REQUEST)),
    truncated: v.boolean(),
  }),
} as const;

export type EventName = keyof typeof EventPayloads;

/**
 * Every event's name, in the order `EventPayloads` defines them: the one list
 * the manifest schema (which events a `[[hook]]` may name) and the SDK's
 * `HOOK_EVENTS` are read from.
 */
export const EVENT_NAMES = Object.freeze(Object.keys(EventPayloads)) as readonly EventName[];
export type EventPayload<E extends EventName> = v.InferOutput<(typeof EventPayloads)[E]>;

const Base = { notes: Notes };
const Block = { block: v.optional(Text) };
const Halt = { halt: v.optional(Text) };
const Context = { context: v.optional(Text) };

/** What each event's hook may answer; fields an event does not take are refused, not ignored. */
export const EventVerdicts = {
  session_start: v.strictObject({ ...Base, ...Context }),
  before_agent_start: v.strictObject({ ...Base, ...Block, ...Halt, ...Context }),
  context: v.strictObject({ ...Base, ...Context, messages: v.optional(v.array(v.unknown())) }),
  tool_call: v.strictObject({
    ...Base,
    ...Block,
    ...Halt,
    ...Context,
    arguments: v.optional(v.unknown()),
    result: v.optional(v.unknown()),
  }),
  tool_result: v.strictObject({ ...Base, ...Block, ...Halt, ...Context }),
  agent_end: v.strictObject({ ...Base, ...Block, ...Halt, ...Context }),
  agent_settled: v.strictObject({ ...Base }),
  /** Can add bounded text, never veto. */
  before_compact: v.strictObject({ ...Base, text: v.optional(v.pipe(v.string(), v.maxLength(16 * 1024))) }),
  /** Notify-only: any answer is ignored, so any object is accepted. */
  usage: v.looseObject({}),
  cap_call: v.strictObject({ ...Base, ...Block }),
  route_call: v.strictObject({ ...Base, ...Block }),
} as const satisfies Record<EventName, v.GenericSchema>;

export type EventVerdict<E extends EventName> = v.InferOutput<(typeof EventVerdicts)[E]>;
