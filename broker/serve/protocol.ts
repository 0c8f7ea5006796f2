/**
 * `tether serve`'s JSON-RPC 2.0 vocabulary: the envelope, the error codes, each
 * method's params (valibot), and the wire shapes of what the library returns.
 * The protocol is documented in docs/api.md; keep the two in step.
 */
import { isAbsolute } from "node:path";
import * as v from "valibot";
import { EventPayloads } from "../../jail-runtime/wire/events.js";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import { TetherError, WireCode } from "../base/errors.js";
import type { Composed, TraceRow } from "../hooks/compose.js";
import { MAX_ROUTE_BYTES } from "../../jail-runtime/wire/session-kinds.js";
import { MAX_COMPACT_MESSAGES } from "../sessions/compaction.js";
import type { CompactReport, FoldRow, HarnessEvent, RouteReport, ToolCallReport } from "../sessions/session.js";
import { SessionId } from "../sessions/session-records.js";
import { CompletionRequest } from "../../jail-runtime/wire/provider-kinds.js";
import type { CompletionReport } from "../providers/completion.js";
import { ProviderPreferenceInput } from "../providers/ranking.js";
import { searchParams } from "./search-wire.js";

/** JSON-RPC error codes: the spec's five, then the server's own (-32000 … -32099). */
export const RpcCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  /** A Tether error; `data.code` is its code (docs/errors.md). */
  tether: -32000,
  /** The connection's in-flight bound is reached, or the server's session or connection bound. */
  busy: -32001,
  /** No open session has that id. */
  unknownSession: -32002,
  /** The server is shutting down and takes no new requests. */
  shuttingDown: -32003,
  /** The session id is open on another workspace. */
  sessionConflict: -32004,
  /** No running sign-in has that login_id. */
  unknownLogin: -32005,
} as const;

/** `data.code` of errors that are not a Tether error (those carry their own code). */
export const ServeCode = {
  parseError: "parse_error",
  invalidRequest: "invalid_request",
  unknownMethod: "unknown_method",
  badArguments: WireCode.badArguments,
  internal: "internal",
  busy: WireCode.busy,
  unknownSession: "unknown_session",
  shuttingDown: "shutting_down",
  sessionConflict: "session_conflict",
  unknownLogin: "unknown_login",
} as const;

export interface RpcErrorBody {
  readonly code: number;
  readonly message: string;
  readonly data: { readonly code: string; readonly field?: string };
}

/** A failure a handler throws to answer a specific JSON-RPC error. */
export class RpcFailure extends Error {
  constructor(
    readonly rpcCode: number,
    readonly dataCode: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

export type RpcId = string | number;

/**
 * A request id: a string (≤ 256) or an integer. `null` is
 * refused: it cannot be told apart from "unknown" in an error.
 */
export const Id = v.union([v.pipe(v.string(), v.maxLength(256)), v.pipe(v.number(), v.safeInteger())]);

/** The envelope of one request or notification (a notification has no `id`). */
export const Envelope = v.object({
  jsonrpc: v.literal("2.0"),
  method: v.pipe(v.string(), v.maxLength(128)),
  params: v.optional(v.unknown()),
  id: v.optional(Id),
});

/** The id to answer an invalid request with: its own when it is a usable id, else null. */
export function salvageId(raw: unknown): RpcId | null {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return null;
  const id = (raw as Record<string, unknown>)["id"];
  return v.is(Id, id) ? id : null;
}

// ── params ────────────────────────────────────────────────────────────────

const Session = SessionId;
const Workspace = v.pipe(
  v.string(),
  v.maxLength(4096),
  v.check((path) => isAbsolute(path), "expected an absolute path (the server's working directory is not the client's)"),
);
const Policy = v.strictObject({
  offline: v.optional(v.boolean()),
  allow: v.optional(v.pipe(v.array(v.pipe(v.string(), v.maxLength(1024))), v.maxLength(256))),
});
const Name = v.pipe(v.string(), v.minLength(1), v.maxLength(256));
const OnlySession = v.strictObject({ session: Session });
const LoginId = v.pipe(v.string(), v.minLength(1), v.maxLength(64));

export const HARNESS_EVENTS = [
  "session_start",
  "before_agent_start",
  "context",
  "tool_call",
  "tool_result",
  "agent_end",
  "agent_settled",
  "before_compact",
  "usage",
] as const satisfies readonly HarnessEvent[];

/**
 * Each harness event's payload as a client sends it (`session_start`
 * takes only `source`: the session knows its id and workspace).
 */
export const HarnessPayloads: Record<HarnessEvent, v.GenericSchema> = {
  session_start: v.object({ source: v.string() }),
  before_agent_start: EventPayloads.before_agent_start,
  context: EventPayloads.context,
  tool_call: EventPayloads.tool_call,
  tool_result: EventPayloads.tool_result,
  agent_end: EventPayloads.agent_end,
  agent_settled: EventPayloads.agent_settled,
  before_compact: EventPayloads.before_compact,
  usage: EventPayloads.usage,
};

export const Params = {
  "session.open": v.strictObject({ id: Session, workspace: Workspace, policy: v.optional(Policy) }),
  "session.status": OnlySession,
  "session.tools": OnlySession,
  "session.commands": OnlySession,
  "session.reload": OnlySession,
  "session.prefer": v.strictObject({ session: Session, extension: Name, enabled: v.nullable(v.boolean()) }),
  "session.set_policy": v.strictObject({ session: Session, policy: Policy }),
  "session.fire": v.strictObject({
    session: Session,
    event: v.picklist(HARNESS_EVENTS),
    payload: v.optional(v.unknown()),
  }),
  "tool.call": v.strictObject({
    session: Session,
    tool: Name,
    arguments: v.optional(v.unknown()),
    call_id: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(256))),
  }),
  "command.run": v.strictObject({ session: Session, line: v.pipe(v.string(), v.maxLength(64 * 1024)) }),
  "call.cancel": v.strictObject({ id: Id }),
  "session.close": v.strictObject({ session: Session, reason: v.optional(v.pipe(v.string(), v.maxLength(256))) }),
  "session.destroy": OnlySession,
  "session.context": OnlySession,
  "session.routes": OnlySession,
  "session.route": v.strictObject({
    session: Session,
    extension: Name,
    route: Name,
    request: v.pipe(v.string(), v.maxLength(MAX_ROUTE_BYTES)),
  }),
  "session.strategies": OnlySession,
  "session.prefer_strategy": v.strictObject({ session: Session, strategy: v.nullable(Name) }),
  "session.compact": v.strictObject({
    session: Session,
    messages: v.pipe(v.array(v.unknown()), v.maxLength(MAX_COMPACT_MESSAGES)),
    reason: v.pipe(v.string(), v.maxLength(256)),
    budget: v.pipe(v.number(), v.integer(), v.minValue(1)),
    strategy: v.optional(Name),
  }),
  "session.folds": v.strictObject({
    session: Session,
    compaction_id: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1))),
  }),
  "session.prefer_providers": v.strictObject({ session: Session, preference: v.nullable(ProviderPreferenceInput) }),
  ...searchParams(Session),
  "providers.list": v.strictObject({ session: v.optional(Session) }),
  "providers.complete": v.strictObject({ session: v.optional(Session), ...CompletionRequest.entries }),
  "login.start": v.strictObject({ extension: Name, login: v.optional(Name) }),
  "login.wait": v.strictObject({ login_id: LoginId }),
  "login.cancel": v.strictObject({ login_id: LoginId }),
  "login.status": v.strictObject({ extension: v.optional(Name) }),
  "login.logout": v.strictObject({ extension: Name, login: v.optional(Name) }),
} as const;

export type Method = keyof typeof Params;
export type ParamsOf<M extends Method> = v.InferOutput<(typeof Params)[M]>;

export function isMethod(name: string): name is Method {
  return Object.hasOwn(Params, name);
}

/** Checks `params` (by name; absent is `{}`) or throws -32602 naming the first failing field. */
export function checkParams<M extends Method>(method: M, params: unknown): ParamsOf<M> {
  if (Array.isArray(params))
    throw new RpcFailure(
      RpcCode.invalidParams,
      ServeCode.badArguments,
      `Invalid params for '${method}': params are by name (an object), not by position`,
    );
  const checked = v.safeParse(Params[method] as v.GenericSchema, params ?? {});
  if (!checked.success) {
    const field = v.getDotPath(checked.issues[0]) ?? undefined;
    throw new RpcFailure(
      RpcCode.invalidParams,
      ServeCode.badArguments,
      `Invalid params for '${method}': ${describeIssues(checked.issues)}`,
      field,
    );
  }
  return checked.output as ParamsOf<M>;
}

/** Checks a harness event's payload, naming the field as `payload.<path>`. */
export function checkPayload(event: HarnessEvent, payload: unknown): Record<string, unknown> {
  const checked = v.safeParse(HarnessPayloads[event], payload ?? {});
  if (!checked.success) {
    const path = v.getDotPath(checked.issues[0]);
    const text = describeIssues(checked.issues).replaceAll(" at .", " at .payload.");
    throw new RpcFailure(
      RpcCode.invalidParams,
      ServeCode.badArguments,
      `Invalid params for 'session.fire': ${path === null ? `payload: ${text}` : text}`,
      path === null ? "payload" : `payload.${path}`,
    );
  }
  return checked.output as Record<string, unknown>;
}

// ── errors ────────────────────────────────────────────────────────────────

/** The JSON-RPC error for anything a handler threw. Tool failures never get here: they are results. */
export function toRpcError(err: unknown): RpcErrorBody {
  if (err instanceof RpcFailure) {
    return {
      code: err.rpcCode,
      message: err.message,
      data: { code: err.dataCode, ...(err.field !== undefined ? { field: err.field } : {}) },
    };
  }
  if (err instanceof TetherError) {
    const code = err.code === WireCode.badArguments ? RpcCode.invalidParams : RpcCode.tether;
    return { code, message: err.message, data: { code: err.code } };
  }
  if (err instanceof v.ValiError) {
    return {
      code: RpcCode.invalidParams,
      message: `Invalid params: ${describeIssues(err.issues)}`,
      data: { code: ServeCode.badArguments },
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  return {
    code: RpcCode.internal,
    message: `Internal error: ${message.slice(0, 1024)}`,
    data: { code: ServeCode.internal },
  };
}

export function unknownSession(id: string): RpcFailure {
  return new RpcFailure(
    RpcCode.unknownSession,
    ServeCode.unknownSession,
    `No open session '${id}'; open it with session.open`,
  );
}

// ── results on the wire (snake_case, arguments as JSON values) ────────────

export interface WireTraceRow {
  readonly extension: string;
  readonly answer: TraceRow["answer"];
  readonly detail: string;
  readonly duration_ms: number;
  readonly invocation_id: number | null;
}

export function traceToWire(row: TraceRow): WireTraceRow {
  return {
    extension: row.extension,
    answer: row.answer,
    detail: row.detail,
    duration_ms: Math.round(row.durationMs * 1000) / 1000,
    invocation_id: row.invocationId,
  };
}

/** The composed verdict of a harness event. */
export function composedToWire(c: Composed): Record<string, unknown> {
  return {
    block: c.block,
    halt: c.halt,
    // tool_call about a harness's own tool: a hook's rewrite of its arguments, or a substitute result.
    rewrite: c.rewrite,
    result: c.result,
    context: c.context,
    notes: c.notes,
    messages: c.messages ?? null,
    compact_text: c.compactText,
    trace: c.trace.map(traceToWire),
  };
}

function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A ToolCallReport, with how many partials were dropped for a client that was not reading. */
export function reportToWire(r: ToolCallReport, partialsDropped: number): Record<string, unknown> {
  const notes =
    partialsDropped > 0
      ? [...r.notes, `tether serve dropped ${partialsDropped} partial report(s): the client was not reading them`]
      : r.notes;
  return {
    outcome: r.outcome,
    extension: r.extension,
    call_id: r.callId,
    invocation_id: r.invocationId,
    arguments: jsonOrText(r.arguments),
    rewritten_by: r.rewrittenBy,
    substituted_by: r.substitutedBy,
    blocked_by: r.blockedBy,
    halt: r.halt,
    context: r.context,
    notes,
    trace: r.trace.map(traceToWire),
    partials_dropped: partialsDropped,
  };
}

/** A RouteReport. */
export function routeToWire(r: RouteReport): Record<string, unknown> {
  return {
    outcome: r.outcome,
    extension: r.extension,
    route: r.route,
    invocation_id: r.invocationId,
    blocked_by: r.blockedBy,
    notes: r.notes,
    trace: r.trace.map(traceToWire),
  };
}

/** A CompactReport: the outcome's compaction id in snake_case. */
export function compactToWire(r: CompactReport): Record<string, unknown> {
  const outcome = r.outcome.ok
    ? { ok: true, compaction_id: r.outcome.compactionId, summary: r.outcome.summary, folds: r.outcome.folds }
    : r.outcome;
  return {
    outcome,
    strategy: r.strategy,
    extension: r.extension,
    hook_text: r.hookText,
    notes: r.notes,
    trace: r.trace.map(traceToWire),
  };
}

/** A CompletionReport, with how many partials were dropped for a client that was not reading. */
export function completionToWire(r: CompletionReport, partialsDropped: number): Record<string, unknown> {
  const o = r.outcome;
  const outcome = o.ok ? { ok: true, text: o.text, usage: o.usage, stop_reason: o.stopReason, model: o.model } : o;
  return {
    outcome,
    provider: r.provider,
    extension: r.extension,
    model: r.model,
    invocation_id: r.invocationId,
    notes: r.notes,
    partials_dropped: partialsDropped,
  };
}

export function foldToWire(f: FoldRow): Record<string, unknown> {
  return {
    compaction_id: f.compactionId,
    strategy: f.strategy,
    extension: f.extension,
    from: f.from,
    to: f.to,
    text: f.text,
    created_at: f.createdAt,
  };
}
