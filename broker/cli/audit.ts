/**
 * `tether audit`: the invocation ledger and the capability audit, filtered.
 */
import { and, desc, eq, gte, type SQL } from "drizzle-orm";
/** A --since value that is neither a duration nor a date (a usage error). */
export class SinceError extends Error {
  override readonly name = "SinceError";
}
import type { Store } from "../store/open.js";
import { capAudit, invocations } from "../store/schema.js";

export interface AuditQuery {
  readonly extension?: string;
  readonly session?: string;
  /** "30m", "2h", "7d", or an ISO date. */
  readonly since?: string;
  /** Only refused capability calls (invocations are left out). */
  readonly denied?: boolean;
}

export type AuditEntry =
  | { type: "invocation"; at: number; session: string; extension: string; kind: string; name: string; strand: string; durationMs: number | null; outcome: string }
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
  const entries: AuditEntry[] = [];
  if (!query.denied) {
    for (const r of store.orm.select().from(invocations).where(and(...invWhere)).orderBy(desc(invocations.id)).limit(1000).all()) {
      entries.push({ type: "invocation", at: r.startedAt, session: r.sessionId, extension: r.extension, kind: r.kind, name: r.name, strand: r.strand, durationMs: r.durationMs, outcome: r.outcome });
    }
  }
  for (const r of store.orm.select().from(capAudit).where(and(...capWhere)).orderBy(desc(capAudit.id)).limit(1000).all()) {
    entries.push({ type: "capability", at: r.at, session: r.sessionId, extension: r.extension, invocation: r.invocationId, capability: r.capability, target: r.target, decision: r.decision, rule: r.rule, bytes: r.bytes });
  }
  return entries.sort((a, b) => a.at - b.at);
}

export function renderAudit(entries: readonly AuditEntry[]): string {
  if (entries.length === 0) return "no audit entries";
  return entries
    .map((e) => {
      const at = new Date(e.at).toISOString();
      return e.type === "invocation"
        ? `${at} ${e.session} ${e.extension} ${e.kind} ${e.name} → ${e.outcome}${e.durationMs !== null ? ` (${e.durationMs} ms)` : ""}`
        : `${at} ${e.session} ${e.extension} cap ${e.capability}${e.target ? ` ${e.target}` : ""} → ${e.decision.toUpperCase()} by ${e.rule}${e.bytes ? ` (${e.bytes} bytes)` : ""}`;
    })
    .join("\n");
}
