/**
 * The audit (`tether audit`, the demo's story): the invocation ledger and the
 * capability audit, filtered; the hook traces (each hook's answer to each
 * event); and the lines they are printed as. The console's audit page reads
 * its times as these do (`parseSince`).
 */
import { auditEntries, hookTraceEntries, type AuditEntry, type HookTraceEntry } from "../store/audit-queries.js";
import type { Store } from "../store/open.js";

export type { AuditEntry, HookTraceEntry };

/** A --since value that is neither a duration nor a date (a usage error). */
export class SinceError extends Error {
  override readonly name = "SinceError";
}

/** At most this many rows of each table when no --limit is given. */
export const DEFAULT_LIMIT = 1000;

export interface AuditQuery {
  readonly extension?: string;
  readonly session?: string;
  /** "30m", "2h", "7d", or an ISO date. */
  readonly since?: string;
  /** Only refused capability calls (invocations are left out). */
  readonly denied?: boolean;
  /** Only the newest this many entries (default: the newest 1000 of each table). */
  readonly limit?: number;
}

export function parseSince(since: string, now = Date.now()): number {
  const rel = /^(\d+)\s*(s|m|h|d)$/.exec(since.trim());
  if (rel) {
    const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[rel[2] as "s" | "m" | "h" | "d"];
    return now - Number(rel[1]) * unit;
  }
  const abs = Date.parse(since);
  if (Number.isNaN(abs))
    throw new SinceError(`--since '${since}': expected a duration like 30m, 2h, 7d or a date like 2026-11-29T10:00`);
  return abs;
}

export function queryAudit(store: Store, query: AuditQuery): AuditEntry[] {
  const since = query.since !== undefined ? parseSince(query.since) : undefined;
  return auditEntries(
    store,
    { extension: query.extension, session: query.session, since, denied: query.denied, limit: query.limit },
    DEFAULT_LIMIT,
  );
}

/** How a decision is coloured on a terminal (the CLI's paint); no colour by default. */
export interface DecisionPaint {
  readonly red: (text: string) => string;
  readonly green: (text: string) => string;
}

const PLAIN: DecisionPaint = { red: (t) => t, green: (t) => t };

/** One line per entry; `paint` colours the decisions (DENIED red, ALLOWED green) on a terminal. */
export function renderAudit(entries: readonly AuditEntry[], paint: DecisionPaint = PLAIN): string {
  if (entries.length === 0) return "no audit entries";
  return entries
    .map((e) => {
      const at = new Date(e.at).toISOString();
      return e.type === "invocation"
        ? `${at} ${e.session} ${e.extension} ${e.kind} ${e.name} ` +
            `→ ${e.outcome}${e.durationMs !== null ? ` (${e.durationMs} ms)` : ""}` +
            `${e.hooksBypassed ? " [hooks bypassed: --no-hooks]" : ""}`
        : `${at} ${e.session} ${e.extension} cap ${e.capability}${e.target ? ` ${e.target}` : ""} ` +
            `→ ${(e.decision === "denied" ? paint.red : paint.green)(e.decision.toUpperCase())} ` +
            `by ${e.rule}${e.secret ? ` with secret ${e.secret}` : ""}${e.bytes ? ` (${e.bytes} bytes)` : ""}`;
    })
    .join("\n");
}

// ── hook traces (`tether audit --hooks`) ─────────────────────────────────

export interface HookTraceQuery {
  /** The extension whose hook answered. */
  readonly extension?: string;
  readonly session?: string;
  /** "30m", "2h", "7d", or an ISO date. */
  readonly since?: string;
  /** Only the newest this many rows (default 1000). */
  readonly limit?: number;
}

/** The hook traces, filtered; the newest `limit` rows, oldest first. */
export function queryHookTraces(store: Store, query: HookTraceQuery): HookTraceEntry[] {
  const since = query.since !== undefined ? parseSince(query.since) : undefined;
  return hookTraceEntries(store, {
    extension: query.extension,
    session: query.session,
    since,
    limit: query.limit ?? DEFAULT_LIMIT,
  });
}

function milliseconds(ms: number): string {
  return ms < 10 ? ms.toFixed(1) : String(Math.round(ms));
}

/** `<at> <session> <extension> hook <event> [<subject>] → <answer>[: <detail>] (<duration>)`, one line each. */
export function renderHookTraces(entries: readonly HookTraceEntry[]): string {
  if (entries.length === 0) return "no hook traces";
  return entries
    .map((e) => {
      const detail = e.detail.replace(/\s*\n\s*/g, " ").trim();
      return (
        `${new Date(e.at).toISOString()} ${e.session} ${e.extension} ` +
        `hook ${e.event}${e.subject ? ` ${e.subject}` : ""} ` +
        `→ ${e.answer}${detail ? `: ${detail}` : ""} (${milliseconds(e.durationMs)} ms)`
      );
    })
    .join("\n");
}
