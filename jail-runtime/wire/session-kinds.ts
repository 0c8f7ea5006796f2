/**
 * The session-facing contributions beside tools, hooks and commands: context
 * loaders, managed preparation and its close, observers, host routes and
 * compaction strategies. Each is an invocation kind; its payload and its
 * answer are defined once here as valibot schemas, read by the SDK (to type
 * and check what an extension is handed) and by the broker (to check what it
 * answers). Both travel as JSON text, as hook payloads and verdicts do.
 */
import * as v from "valibot";
import { CompleteAnswer, CompletePayload } from "./provider-kinds.js";
import { ServiceAnswer, ServicePayload } from "./service-kinds.js";
import { SearchAnswer, SearchPayload, SearchProviderInfo } from "./search-kinds.js";

const Text = (max: number) => v.pipe(v.string(), v.maxLength(max));
const Count = v.pipe(v.number(), v.integer(), v.minValue(0));
const Name = v.pipe(v.string(), v.maxLength(256));

/** The most text one context loader (or one preparation's `context`) may add: 64 KiB. */
export const MAX_CONTEXT_BYTES = 64 * 1024;
/** The most a route's request or its response may hold: 1 MiB. */
export const MAX_ROUTE_BYTES = 1024 * 1024;
/** The most one observer batch carries; what a slow observer misses beyond it is counted, not queued. */
export const MAX_OBSERVED_BATCH = 256;
/** The longest line an initializer may answer (`{ message }`). */
export const MAX_INIT_MESSAGE = 1024;
/** The most folds one compaction may make. */
export const MAX_FOLDS = 256;

/**
 * What each kind asked through a scope is called on the wire (`call.kind`).
 * `complete` (a model provider's completion, ./provider-kinds.ts) is asked in
 * the daemon scope, not a session's, but travels the same way; so does
 * `service` (an HTTP request to a `[[service]]`, ./service-kinds.ts), and
 * `init` (an extension's initializer, `[init]`: once per approved version).
 */
export const SESSION_KINDS = [
  "context",
  "prepare",
  "close",
  "observe",
  "route",
  "compact",
  "complete",
  "service",
  "init",
  "search",
] as const;
export type SessionKind = (typeof SESSION_KINDS)[number];

/** The session as a loader, a preparation or a route sees it: no files, the workspace as text. */
const SessionInfo = { session_id: Name, workspace: Text(4096) };

/** What an observer can be told about, by kind (the manifest's `[observe] events`). */
export const OBSERVED_KINDS = ["turn", "usage", "compaction", "session"] as const;
export type ObservedKind = (typeof OBSERVED_KINDS)[number];

export const ObservedEvent = v.object({
  /** Per session and observer, from 1, in delivery order; a gap is what was dropped. */
  seq: Count,
  kind: v.picklist(OBSERVED_KINDS),
  at_ms: Count,
  data: v.record(v.string(), v.unknown()),
});
export type ObservedEvent = v.InferOutput<typeof ObservedEvent>;

export const SessionPayloads = {
  context: v.object({ ...SessionInfo }),
  prepare: v.object({
    ...SessionInfo,
    /** True when the session was open before (reopened, or prepared again at a reload). */
    resumed: v.boolean(),
    /** The extensions active in the session, in registry order, as they were when it was asked. */
    active: v.array(Name),
  }),
  close: v.object({
    session_id: Name,
    reason: v.picklist(["session_closed", "reloaded_out", "prepare_failed", "activation_failed"]),
  }),
  observe: v.object({
    session_id: Name,
    events: v.pipe(v.array(ObservedEvent), v.maxLength(MAX_OBSERVED_BATCH)),
    /** Events this observer was not told about since its last batch (it was too slow). */
    dropped: Count,
  }),
  route: v.object({
    ...SessionInfo,
    route: Name,
    request: Text(MAX_ROUTE_BYTES),
    active: v.array(Name),
    /** The session's search providers, in its preference's order (./search-kinds.ts). */
    search: v.optional(v.pipe(v.array(SearchProviderInfo), v.maxLength(1024)), []),
  }),
  compact: v.object({
    session_id: Name,
    strategy: Name,
    reason: Text(256),
    /** The summary's size the harness wants, in characters. */
    budget: Count,
    messages: v.array(v.unknown()),
    /** What `before_compact` hooks asked the summariser to keep, in registry order. */
    hook_text: v.array(v.string()),
  }),
  complete: CompletePayload,
  service: ServicePayload,
  search: SearchPayload,
  /** An initializer (`[init]`): the manifest version it initializes, and why it runs now. */
  init: v.object({
    version: Text(256),
    /** `approved`: right after `tether approve`; `start`: a broker found the approved version not yet initialized. */
    reason: v.picklist(["approved", "start"]),
  }),
} as const;

export const Fold = v.object({
  /** The first message folded (an index into `messages`). */
  from: Count,
  /** The last message folded, inclusive. */
  to: Count,
  text: Text(MAX_CONTEXT_BYTES),
});
export type Fold = v.InferOutput<typeof Fold>;

export const SessionAnswers = {
  context: v.strictObject({ text: Text(MAX_CONTEXT_BYTES) }),
  prepare: v.strictObject({
    instructions: v.optional(Text(MAX_CONTEXT_BYTES)),
    context: v.optional(Text(MAX_CONTEXT_BYTES)),
    warnings: v.optional(v.pipe(v.array(Text(4096)), v.maxLength(16))),
    /** Which of its declared tools are on in this session (default: all approved). */
    tools: v.optional(v.pipe(v.array(Name), v.maxLength(1024))),
    commands: v.optional(v.pipe(v.array(Name), v.maxLength(1024))),
    /** Whether it observes this session (default: as its manifest's `[observe]` says). */
    observe: v.optional(v.boolean()),
  }),
  close: v.strictObject({}),
  observe: v.strictObject({}),
  route: v.strictObject({ response: Text(MAX_ROUTE_BYTES) }),
  compact: v.strictObject({ summary: Text(MAX_CONTEXT_BYTES), folds: v.pipe(v.array(Fold), v.maxLength(MAX_FOLDS)) }),
  complete: CompleteAnswer,
  service: ServiceAnswer,
  search: SearchAnswer,
  /** What the initializer did, in one line for the operator (`tether approve`, `tether status`). */
  init: v.strictObject({ message: v.optional(Text(MAX_INIT_MESSAGE)) }),
} as const;

export type SessionPayload<K extends SessionKind> = v.InferOutput<(typeof SessionPayloads)[K]>;
export type SessionAnswer<K extends SessionKind> = v.InferOutput<(typeof SessionAnswers)[K]>;
/** What an extension's function may return for kind K: its answer, with optional fields left out. */
export type SessionReply<K extends SessionKind> = v.InferInput<(typeof SessionAnswers)[K]>;
