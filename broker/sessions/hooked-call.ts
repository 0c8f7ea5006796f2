/**
 * The hooked tool call: `tool_call` hooks may block, halt, rewrite the
 * arguments (re-validated against the tool's schema) or answer a substitute
 * result; the tool runs through the session's scope; `tool_result` hooks see
 * the outcome and may withhold it. This file owns every ledger row of a call
 * the bus stops or answers instead of the tool (the broker writes the rest).
 */
import { randomUUID } from "node:crypto";
import * as v from "valibot";
import { MediaBlock } from "../../jail-runtime/wire/media-blocks.js";
import { CALLER_JSON_BOUNDS, DocumentBoundsError, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import { BrokerCode, WireCode } from "../base/errors.js";
import { jsonSyntaxError } from "../base/json-syntax.js";
import { NOTHING_COMPOSED, type TraceRow } from "../hooks/compose.js";
import { failure, type InvocationOutcome, type ToolContent, type ToolReply } from "../base/outcome.js";
import type { ScopeCallOptions, SessionScope } from "../kernel/session-scope.js";
import type { Ledger } from "../store/ledger.js";
import { type ToolArgsChecker, toolArgsKey } from "../base/tool-args.js";
import type { ActiveSet } from "./active-set.js";
import { lostApprovalOutcome } from "./lost-approval.js";
import type { SessionBus } from "./bus.js";
import type { ActListener, HeardActs, ReportedActs } from "./reported-acts.js";

/** What one tool call came to, hooks included. */
export interface ToolCallReport {
  readonly outcome: InvocationOutcome<"tool">;
  readonly extension: string | null;
  readonly callId: string;
  /** The ledger row of the call (also for a blocked or substituted one). */
  readonly invocationId: number | null;
  /** The arguments the tool ran with (JSON text): the caller's, or a hook's rewrite. */
  readonly arguments: string;
  readonly rewrittenBy: string | null;
  readonly substitutedBy: string | null;
  readonly blockedBy: string | null;
  /** A hook asked to end the turn. */
  readonly halt: { readonly reason: string; readonly by: string } | null;
  /** Text the model reads before its next request (tool_call and tool_result hooks). */
  readonly context: readonly string[];
  /** Shown to the user only. */
  readonly notes: readonly string[];
  readonly trace: readonly TraceRow[];
}

/** What a hooked call needs of its session. */
export interface HookedCallParts {
  readonly scope: SessionScope;
  readonly active: ActiveSet;
  readonly bus: SessionBus;
  readonly ledger: Ledger;
  /** The broker's schema checker (a hook's rewrite is checked like the caller's arguments). */
  readonly toolArgs: ToolArgsChecker;
  /** Hears the acts the call's invocation reports (their hooks' context and notes join the report). */
  readonly acts?: ReportedActs;
}

function isContent(value: unknown): value is ToolContent {
  if (typeof value !== "object" || value === null) return false;
  const block = value as { type?: unknown; text?: unknown };
  if (block.type === "text") return typeof block.text === "string";
  if (block.type === "json") return "json" in block;
  // An image, audio or resource block must be whole (valid base64, a media type): else the substitute is JSON.
  return v.is(MediaBlock, value);
}

/**
 * A hook's substitute result as callers receive a tool's reply (JSON blocks parsed, as the broker
 * hands them out). The substitute is any JSON a hook answered: here is where it becomes a typed
 * tool reply, so its shape is checked here.
 */
function toolValueOf(substitute: unknown): ToolReply {
  const value = substitute as { content?: unknown; terminate?: unknown } | null;
  if (typeof value === "object" && value !== null && Array.isArray(value.content) && value.content.every(isContent)) {
    return { content: value.content, terminate: value.terminate === true };
  }
  if (typeof substitute === "string") return { content: [{ type: "text", text: substitute }], terminate: false };
  return { content: [{ type: "json", json: substitute }], terminate: false };
}

/**
 * The report of a call no hook changed (none stood around it, or it was refused before any was
 * asked): the caller's arguments, and what the hooks of the acts it reported said. One literal,
 * not spreads: a spread whose keys a second spread overwrote cost more than the call's frame.
 */
function plainReport(
  callId: string,
  args: string,
  outcome: InvocationOutcome<"tool">,
  extension: string | null,
  invocationId: number | null,
  acts?: HeardActs,
): ToolCallReport {
  return {
    callId,
    arguments: args,
    rewrittenBy: null,
    substitutedBy: null,
    blockedBy: null,
    halt: acts?.halt ?? null,
    context: acts?.context ?? [],
    notes: acts?.notes ?? [],
    trace: acts?.trace ?? [],
    outcome,
    extension,
    invocationId,
  };
}

/**
 * The caller's options for the tool's invocation, hearing its ledger row: `at` is told it first, then the
 * listener of the acts it reports, then the caller. (The call is awaited where it is made, where a lost
 * approval is caught: a helper awaiting it would cost every call a turn.)
 */
function hearingRow(
  options: ScopeCallOptions,
  heard: ActListener | undefined,
  at: (id: number) => void,
): ScopeCallOptions {
  return {
    ...options,
    onInvocation: (id) => {
      at(id);
      heard?.at(id);
      options.onInvocation?.(id);
    },
  };
}

/**
 * Calls a tool by name, with the hook bus around it: `tool_call` hooks may
 * block, halt, rewrite the arguments (re-validated against the tool's schema)
 * or answer a substitute result; `tool_result` hooks see the outcome and may
 * withhold it. Never rejects for an extension's faults.
 */
export async function hookedToolCall(
  session: HookedCallParts,
  tool: string,
  args: string,
  options: ScopeCallOptions & { callId?: string } = {},
): Promise<ToolCallReport> {
  session.active.refresh();
  const callId = options.callId ?? randomUUID();
  const extension = session.active.applied.plan.tools.get(tool);
  if (extension === undefined) {
    const outcome = session.active.notServed("tool", tool, [...session.active.applied.plan.tools.keys()]);
    return plainReport(callId, args, outcome, null, null);
  }
  if (!session.bus.hooked("tool_call", { name: tool }) && !session.bus.hooked("tool_result", { name: tool })) {
    // Nothing listens for this tool: the call as the broker makes it, with nothing composed around it.
    let invocationId: number | null = null;
    const heard = session.acts?.hear(callId);
    let outcome: InvocationOutcome<"tool">;
    try {
      outcome = await session.scope.callTool(
        extension,
        tool,
        args,
        hearingRow(options, heard, (id) => (invocationId = id)),
      );
    } catch (err) {
      outcome = lostApprovalOutcome(err);
    }
    return plainReport(callId, args, outcome, extension, invocationId, heard?.take());
  }
  const row = session.active.applied.known.get(extension)?.installed?.manifest.tool.find((t) => t.name === tool);
  let parsed: unknown;
  try {
    parsed = parseBoundedJson(args, CALLER_JSON_BOUNDS);
  } catch (err) {
    const at = err instanceof DocumentBoundsError ? null : jsonSyntaxError(args);
    const what =
      err instanceof DocumentBoundsError
        ? `Arguments are ${err.message} (the bound for any JSON document)`
        : at === null
          ? "Arguments are not JSON"
          : `Arguments are not JSON: ${at.message}`;
    const outcome = failure(WireCode.badArguments, `tool '${tool}': ${what}`);
    return plainReport(callId, args, outcome, extension, null);
  }
  const schemaKey = toolArgsKey(session.active.applied.known.get(extension)?.installed?.manifestHash ?? "", tool);
  /** Why the tool's schema refuses these arguments (JSON text), or null. */
  const unfit = (text: string): string | null => {
    const checked = session.toolArgs.check(schemaKey, row?.parameters ?? { type: "object" }, text);
    return checked.ok ? null : checked.msg;
  };
  const validateArguments = (rewrite: unknown): string | null => unfit(JSON.stringify(rewrite));

  const ledger = session.ledger;
  /** The ledger row of a call that never reached the satellite, finished as `outcome`. */
  const unrun = (outcome: string): number => {
    const id = ledger.begin({
      sessionId: session.scope.id,
      extension,
      kind: "tool",
      name: tool,
      strand: options.strand ?? "",
    });
    ledger.finish(id, outcome);
    return id;
  };
  // Arguments the tool's schema refuses are refused before any hook is asked, as the tool
  // would refuse them: a hook sees only calls that could run, so its notes never read as if
  // the hook broke on arguments nobody could have run with.
  const refused = unfit(args);
  if (refused !== null) {
    const id = unrun(WireCode.badArguments);
    options.onInvocation?.(id);
    return plainReport(callId, args, failure(WireCode.badArguments, `tool '${tool}': ${refused}`), extension, id);
  }
  // Traced once the call's ledger row exists, so the verdicts point at it.
  const before = await session.bus.compose(
    "tool_call",
    { tool, call_id: callId, arguments: parsed },
    { validateArguments },
  );
  const context = [...before.context];
  const notes = [...before.notes];
  const trace = [...before.trace];
  const stopped = before.block ?? before.halt;
  if (stopped !== null) {
    // Neither ran: the ledger still shows the call, with who stopped it.
    const id = unrun(BrokerCode.blocked);
    session.bus.traced("tool_call", before, tool, id);
    const what = before.block !== null ? "Blocked" : "The turn was halted";
    const outcome = failure(BrokerCode.blocked, `${what} by '${stopped.by}': ${stopped.reason}`);
    return {
      ...plainReport(callId, args, outcome, extension, id),
      blockedBy: stopped.by,
      halt: before.halt,
      context,
      notes,
      trace,
    };
  }
  const finalArgs = before.rewrite !== null ? JSON.stringify(before.rewrite.arguments) : args;
  const startedMs = Date.now();
  let invocationId: number | null = null;
  let outcome: InvocationOutcome<"tool">;
  let acted: HeardActs | null = null;
  if (before.result !== null) {
    invocationId = unrun("substituted");
    outcome = { ok: true, value: toolValueOf(before.result.value) };
  } else {
    const heard = session.acts?.hear(callId);
    try {
      outcome = await session.scope.callTool(
        extension,
        tool,
        finalArgs,
        hearingRow(options, heard, (id) => (invocationId = id)),
      );
    } catch (err) {
      outcome = lostApprovalOutcome(err);
    }
    // The acts it reported: their hooks' context and notes come between the call's and its result's.
    acted = heard?.take() ?? null;
  }
  if (acted !== null) {
    context.push(...acted.context);
    notes.push(...acted.notes);
    trace.push(...acted.trace);
  }
  const finishedMs = Date.now();
  session.bus.traced("tool_call", before, tool, invocationId);

  // Only a tool_call hook listens (the common guard): the result is composed of nothing.
  const after = session.bus.hooked("tool_result", { name: tool })
    ? session.bus.traced(
        "tool_result",
        await session.bus.compose("tool_result", {
          tool,
          call_id: callId,
          // Parsed once: the caller's arguments as parsed above, or the rewrite as the hook gave it.
          arguments: before.rewrite !== null ? before.rewrite.arguments : parsed,
          ok: outcome.ok,
          result: outcome.ok ? outcome.value : outcome.error,
          started_ms: startedMs,
          finished_ms: finishedMs,
        }),
        tool,
        invocationId,
      )
    : NOTHING_COMPOSED;
  context.push(...after.context);
  notes.push(...after.notes);
  trace.push(...after.trace);
  if (after.block !== null) {
    outcome = {
      ok: false,
      error: { code: BrokerCode.blocked, msg: `The result was withheld by '${after.block.by}': ${after.block.reason}` },
    };
  }
  return {
    outcome,
    extension,
    callId,
    invocationId,
    arguments: finalArgs,
    rewrittenBy: before.rewrite?.by ?? null,
    substitutedBy: before.result?.by ?? null,
    blockedBy: after.block?.by ?? null,
    halt: after.halt ?? acted?.halt ?? null,
    context,
    notes,
    trace,
  };
}
