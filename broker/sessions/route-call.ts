/**
 * Host routes: the harness (not the model) calls a named `[[route]]` of an
 * active extension with a request string, answered in the session's context —
 * the payload carries the session's id, its workspace and its active set. The
 * `route_call` hooks are asked first and may block it (as `tool_call` hooks
 * may block a tool). This file owns the ledger row of a route call the bus
 * stops; the broker writes the rest (kind `route`).
 */
import * as v from "valibot";
import { DocumentBoundsError, parseBoundedJson } from "../../jail-runtime/wire/document-bounds.js";
import { MAX_ROUTE_CALL_REQUEST } from "../../jail-runtime/wire/events.js";
import { describeIssues } from "../../jail-runtime/wire/frames.js";
import { MAX_ROUTE_BYTES, SessionAnswers, type SessionPayload } from "../../jail-runtime/wire/session-kinds.js";
import { BrokerCode, TetherError, WireCode } from "../base/errors.js";
import { failure, type Failure } from "../base/outcome.js";
import type { TraceRow } from "../hooks/compose.js";
import type { ScopeCallOptions, SessionScope } from "../kernel/session-scope.js";
import type { Ledger } from "../store/ledger.js";
import type { ActiveSet } from "./active-set.js";
import type { SessionBus } from "./bus.js";
import { activeRows, notServedRow } from "./named-rows.js";

/** What one route call came to, hooks included. */
export interface RouteReport {
  readonly outcome: { readonly ok: true; readonly response: string } | Failure;
  readonly extension: string;
  readonly route: string;
  /** The ledger row of the call (also for a blocked one); null when it never got that far. */
  readonly invocationId: number | null;
  /** The `route_call` hook that blocked it. */
  readonly blockedBy: string | null;
  /** Shown to the user only. */
  readonly notes: readonly string[];
  readonly trace: readonly TraceRow[];
}

/** What a route call needs of its session. */
export interface RouteParts {
  readonly scope: SessionScope;
  readonly active: ActiveSet;
  readonly bus: SessionBus;
  readonly ledger: Ledger;
  readonly workspace: string;
  /** The session's search providers in its preference's order, handed to the route (search-providers.ts). */
  readonly search?: () => SessionPayload<"route">["search"];
}

/**
 * Calls `route` of `extension` with `request`. Only an active extension whose
 * approval grants the route answers; never rejects for an extension's faults.
 */
export async function routeCall(
  parts: RouteParts,
  extension: string,
  route: string,
  request: string,
  options: ScopeCallOptions = {},
): Promise<RouteReport> {
  parts.active.refresh();
  const base = { extension, route, invocationId: null, blockedBy: null, notes: [], trace: [] };
  const { plan } = parts.active.applied;
  if (!activeRows(parts.active, "route").some((r) => r.extension === extension && r.name === route)) {
    return { ...base, outcome: notServedRow(parts.active, "route", route, extension) };
  }
  if (typeof request !== "string")
    return {
      ...base,
      outcome: failure(WireCode.badArguments, `The request to route '${extension}/${route}' must be a string`),
    };
  const bytes = Buffer.byteLength(request, "utf8");
  if (bytes > MAX_ROUTE_BYTES) {
    return {
      ...base,
      outcome: failure(
        WireCode.badArguments,
        `The request to route '${extension}/${route}' is ${bytes} bytes; a route's request may hold at ` +
          `most ${MAX_ROUTE_BYTES} bytes (1 MiB)`,
      ),
    };
  }
  const subject = `${extension}/${route}`;
  // A guard is shown the request's head, and told when it was cut.
  const shown = {
    extension,
    route,
    request: request.slice(0, MAX_ROUTE_CALL_REQUEST),
    truncated: request.length > MAX_ROUTE_CALL_REQUEST,
  };
  const before = await parts.bus.compose("route_call", shown);
  if (before.block !== null) {
    const id = parts.ledger.begin({
      sessionId: parts.scope.id,
      extension,
      kind: "route",
      name: route,
      strand: options.strand ?? "",
    });
    parts.ledger.finish(id, BrokerCode.blocked);
    parts.bus.traced("route_call", before, subject, id);
    return {
      ...base,
      invocationId: id,
      blockedBy: before.block.by,
      notes: before.notes,
      trace: before.trace,
      outcome: failure(BrokerCode.blocked, `Blocked by '${before.block.by}': ${before.block.reason}`),
    };
  }
  const payload: SessionPayload<"route"> = {
    session_id: parts.scope.id,
    workspace: parts.workspace,
    route,
    request,
    active: [...plan.active],
    search: parts.search?.() ?? [],
  };
  let invocationId: number | null = null;
  let outcome: RouteReport["outcome"];
  try {
    const result = await parts.scope.invoke(extension, "route", route, JSON.stringify(payload), {
      ...options,
      onInvocation: (id) => {
        invocationId = id;
        options.onInvocation?.(id);
      },
    });
    outcome = result.outcome.ok ? responseOf(subject, result.outcome.value) : result.outcome;
  } catch (err) {
    // The broker's own refusals (closed, not approved any more) are answers too.
    if (!(err instanceof TetherError)) throw err;
    outcome = failure(err.code, err.message);
  }
  parts.bus.traced("route_call", before, subject, invocationId);
  return { ...base, invocationId, notes: before.notes, trace: before.trace, outcome };
}

/** The route's answer, checked: its JSON text must be exactly `{response}`, bounded. */
function responseOf(subject: string, value: string): RouteReport["outcome"] {
  let parsed: unknown;
  try {
    parsed = parseBoundedJson(value);
  } catch (err) {
    const why = err instanceof DocumentBoundsError ? err.message : "not JSON";
    return failure(WireCode.crashed, `route '${subject}' answered something that is ${why}`);
  }
  const checked = v.safeParse(SessionAnswers.route, parsed);
  if (!checked.success)
    return failure(WireCode.crashed, `route '${subject}' answered what it may not: ${describeIssues(checked.issues)}`);
  return { ok: true, response: checked.output.response };
}
