/**
 * What `tether audit` reads: the invocation ledger and the capability audit
 * together, and the hook traces, each filtered and bounded to the newest rows.
 * (The ledger writes them: `ledger.ts`.)
 */
import { and, desc, eq, gte, type SQL } from "drizzle-orm";
import type { Store } from "./open.js";
import { capAudit, hookTraces, invocations } from "./schema.js";

export interface AuditFilter {
  readonly extension?: string | undefined;
  readonly session?: string | undefined;
  /** Only rows from this time on (ms since the epoch). */
  readonly since?: number | undefined;
  /** Only refused capability calls (invocations are left out). */
  readonly denied?: boolean | undefined;
  /** The newest this many entries of both tables together; without it, the newest `perTable` of each. */
  readonly limit?: number | undefined;
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
  | {
      type: "capability";
      at: number;
      session: string;
      extension: string;
      invocation: number | null;
      capability: string;
      target: string;
      decision: string;
      rule: string;
      bytes: number;
      secret?: string | null;
    };

/** Invocations and capability decisions, oldest first. */
export function auditEntries(store: Store, filter: AuditFilter, perTable: number): AuditEntry[] {
  const invWhere: SQL[] = [];
  const capWhere: SQL[] = [];
  if (filter.extension !== undefined) {
    invWhere.push(eq(invocations.extension, filter.extension));
    capWhere.push(eq(capAudit.extension, filter.extension));
  }
  if (filter.session !== undefined) {
    invWhere.push(eq(invocations.sessionId, filter.session));
    capWhere.push(eq(capAudit.sessionId, filter.session));
  }
  if (filter.since !== undefined) {
    invWhere.push(gte(invocations.startedAt, filter.since));
    capWhere.push(gte(capAudit.at, filter.since));
  }
  if (filter.denied) capWhere.push(eq(capAudit.decision, "denied"));
  const limit = filter.limit ?? perTable;
  const entries: AuditEntry[] = [];
  if (!filter.denied) {
    for (const r of store.orm
      .select()
      .from(invocations)
      .where(and(...invWhere))
      .orderBy(desc(invocations.id))
      .limit(limit)
      .all()) {
      entries.push({
        type: "invocation",
        at: r.startedAt,
        session: r.sessionId,
        extension: r.extension,
        kind: r.kind,
        name: r.name,
        strand: r.strand,
        durationMs: r.durationMs,
        outcome: r.outcome,
        hooksBypassed: r.hooksBypassed,
      });
    }
  }
  for (const r of store.orm
    .select()
    .from(capAudit)
    .where(and(...capWhere))
    .orderBy(desc(capAudit.id))
    .limit(limit)
    .all()) {
    entries.push({
      type: "capability",
      at: r.at,
      session: r.sessionId,
      extension: r.extension,
      invocation: r.invocationId,
      capability: r.capability,
      target: r.target,
      decision: r.decision,
      rule: r.rule,
      bytes: r.bytes,
      secret: r.secret,
    });
  }
  entries.sort((a, b) => a.at - b.at);
  // With a limit, the newest N of both tables together.
  return filter.limit !== undefined ? entries.slice(-filter.limit) : entries;
}

export interface HookTraceFilter {
  /** The extension whose hook answered. */
  readonly extension?: string | undefined;
  readonly session?: string | undefined;
  /** Only rows from this time on (ms since the epoch). */
  readonly since?: number | undefined;
  /** Only the newest this many rows. */
  readonly limit: number;
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
export function hookTraceEntries(store: Store, filter: HookTraceFilter): HookTraceEntry[] {
  const where: SQL[] = [];
  if (filter.extension !== undefined) where.push(eq(hookTraces.extension, filter.extension));
  if (filter.session !== undefined) where.push(eq(hookTraces.sessionId, filter.session));
  if (filter.since !== undefined) where.push(gte(hookTraces.at, filter.since));
  const rows = store.orm
    .select()
    .from(hookTraces)
    .where(and(...where))
    // The newest by when they were traced (several brokers may write interleaved).
    .orderBy(desc(hookTraces.at), desc(hookTraces.id))
    .limit(filter.limit)
    .all();
  return rows
    .sort((a, b) => a.at - b.at || a.id - b.id)
    .map(
      (r): HookTraceEntry => ({
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
      }),
    );
}
