/**
 * `tether audit`: the invocation ledger and the capability audit, filtered;
 * with --hooks, the hook traces (each hook's answer to each event).
 */
import { and, desc, eq, gte, type SQL } from "drizzle-orm";
import type { Store } from "../store/open.js";
import { capAudit, hookTraces, invocations } from "../store/schema.js";

/** A --since value that is neither a duration nor a date (a usage error). */
export class SinceError extends Error {
  override readonly name = "SinceError";
}

/** A --limit value that is not a positive whole number (a usage error). */
export class LimitError extends Error {
  override readonly name = "LimitError";
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

export type AuditEntry =
  | {
      type: "invocation";
      at: number;
      session: string;
      extension: string;
      kind: string;
      name: string;
      strand: string;
      durationMs: number | null;
      outcome: string;
      /** The operator bypassed the hook bus (`tether call --no-hooks`). */
      hooksBypassed: boolean;
    }
  | { type: "capability"; at: number; session: string; extension: string; invocation: number | null; capability: string; target: string; decision: string; rule: string; bytes: number };

export function parseSince(since: string, now = Date.now()): number {
  const rel = /^(\d+)\s*(s|m|h|d)$/.exec(since.trim());
  if (rel) {
    const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[rel[2] as "s" | "m" | "h" | "d"];
    return now - Number(rel[1]) * unit;
  }
  const abs = Date.parse(since);
  if (Number.isNaN(abs)) throw new SinceError(`--since '${since}': expected a duration like 30m, 2h, 7d or a date like 2026-11-29T10:00`);
  return abs;
}

/** Parses --limit: a whole number from 1 up. */
export function parseLimit(limit: string): number {
  const n = /^\d+$/.test(limit.trim()) ? Number(limit.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw new LimitError(`--limit '${limit}': expected a whole number of rows, 1 or more`);
  return n;
}

export function queryAudit(store: Store, query: AuditQuery): AuditEntry[] {
  const since = query.since !== undefined ? parseSince(query.since) : undefined;
  const invWhere: SQL[] = [];
  const capWhere: SQL[] = [];
  if (query.extension !== undefined) {
    invWhere.push(eq(invocations.extension, query.extension));
    capWhere.push(eq(capAudit.extension, query.extension));
  }
  if (query.session !== undefined) {
    invWhere.push(eq(invocations.sessionId, query.session));
    capWhere.push(eq(capAudit.sessionId, query.session));
  }
  if (since !== undefined) {
    invWhere.push(gte(invocations.startedAt, since));
    capWhere.push(gte(capAudit.at, since));
  }
  if (query.denied) capWhere.push(eq(capAudit.decision, "denied"));
  const limit = query.limit ?? DEFAULT_LIMIT;
  const entries: AuditEntry[] = [];
  if (!query.denied) {
    for (const r of store.orm.select().from(invocations).where(and(...invWhere)).orderBy(desc(invocations.id)).limit(limit).all()) {
      entries.push({ type: "invocation", at: r.startedAt, session: r.sessionId, extension: r.extension, kind: r.kind, name: r.name, strand: r.strand, durationMs: r.durationMs, outcome: r.outcome, hooksBypassed: r.hooksBypassed });
    }
  }
  for (const r of store.orm.select().from(capAudit).where(and(...capWhere)).orderBy(desc(capAudit.id)).limit(limit).all()) {
    entries.push({ type: "capability", at: r.at, session: r.sessionId, extension: r.extension, invocation: r.invocationId, capability: r.capability, target: r.target, decision: r.decision, rule: r.rule, bytes: r.bytes });
  }
  entries.sort((a, b) => a.at - b.at);
  // With --limit, the newest N of both tables together.
  return query.limit !== undefined ? entries.slice(-query.limit) : entries;
}

export function renderAudit(entries: readonly AuditEntry[]): string {
  if (entries.length === 0) return "no audit entries";
  return entries
    .map((e) => {
      const at = new Date(e.at).toISOString();
      return e.type === "invocation"
        ? `${at} ${e.session} ${e.extension} ${e.kind} ${e.name} → ${e.outcome}${e.durationMs !== null ? ` (${e.durationMs} ms)` : ""}${e.hooksBypassed ? " [hooks bypassed: --no-hooks]" : ""}`
        : `${at} ${e.session} ${e.extension} cap ${e.capability}${e.target ? ` ${e.target}` : ""} → ${e.decision.toUpperCase()} by ${e.rule}${e.bytes ? ` (${e.bytes} bytes)` : ""}`;
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

/** One hook's answer to one event. */
export interface HookTraceEntry {
  readonly type: "hook";
  readonly at: number;
  readonly session: string;
  readonly event: string;
  /** What the event was about: the tool name, "capability target"; empty for the harness's events. */
  readonly subject: string;
  /** The ledger row the event was about (the tool call, the call making a capability call). */
  readonly aboutInvocation: number | null;
  /** The hook's own ledger row (null for the built-in command hooks). */
  readonly hookInvocation: number | null;
  readonly extension: string;
  readonly answer: string;
  readonly detail: string;
  readonly durationMs: number;
}

/** The hook traces, filtered; the newest `limit` rows, oldest first. */
export function queryHookTraces(store: Store, query: HookTraceQuery): HookTraceEntry[] {
  const where: SQL[] = [];
  if (query.extension !== undefined) where.push(eq(hookTraces.extension, query.extension));
  if (query.session !== undefined) where.push(eq(hookTraces.sessionId, query.session));
  if (query.since !== undefined) where.push(gte(hookTraces.at, parseSince(query.since)));
  const rows = store.orm
    .select()
    .from(hookTraces)
    .where(and(...where))
    // The newest by when they were traced (several brokers may write interleaved).
    .orderBy(desc(hookTraces.at), desc(hookTraces.id))
    .limit(query.limit ?? DEFAULT_LIMIT)
    .all();
  return rows
    .sort((a, b) => a.at - b.at || a.id - b.id)
    .map((r): HookTraceEntry => ({
      type: "hook",
      at: r.at,
      session: r.sessionId,
      event: r.event,
      subject: r.subject,
      aboutInvocation: r.aboutInvocationId,
      hookInvocation: r.hookInvocationId,
      extension: r.extension,
      answer: r.answer,
      detail: r.detail,
      durationMs: r.durationMs,
    }));
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
      return `${new Date(e.at).toISOString()} ${e.session} ${e.extension} hook ${e.event}${e.subject ? ` ${e.subject}` : ""} → ${e.answer}${detail ? `: ${detail}` : ""} (${milliseconds(e.durationMs)} ms)`;
    })
    .join("\n");
}
