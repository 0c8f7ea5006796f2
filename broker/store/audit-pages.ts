/**
 * What the console's audit page reads: the ledger and the capability audit,
 * each filtered (extension, session, outcome or decision, a time range) and
 * paged newest first; one call with its capability calls and hook traces; and
 * the activity over time per extension (calls, refusals, crashes) the chart
 * draws. Read-only, straight from the store `tether audit` reads.
 */
import { and, count, desc, eq, gte, lte, or, sql, type SQL } from "drizzle-orm";
import type { Store } from "./open.js";
import { capAudit, hookTraces, invocations } from "./schema.js";

export interface AuditPageFilter {
  readonly extension?: string | undefined;
  readonly session?: string | undefined;
  /** The ledger's outcome ("ok" or an error code). */
  readonly outcome?: string | undefined;
  /** The capability audit's decision. */
  readonly decision?: "allowed" | "denied" | undefined;
  /** From this time on, up to this time (ms since the epoch, both included). */
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  /** 1 is the newest page. */
  readonly page: number;
}

export const PAGE_SIZE = 50;

export type LedgerRow = typeof invocations.$inferSelect;
export type CapRow = typeof capAudit.$inferSelect;
export type TraceRow = typeof hookTraces.$inferSelect;

export interface AuditPage {
  readonly ledger: readonly LedgerRow[];
  readonly capabilities: readonly CapRow[];
  /** Whether either table has rows past this page. */
  readonly more: boolean;
}

function ledgerWhere(f: AuditPageFilter): SQL | undefined {
  const w: SQL[] = [];
  if (f.extension !== undefined) w.push(eq(invocations.extension, f.extension));
  if (f.session !== undefined) w.push(eq(invocations.sessionId, f.session));
  if (f.outcome !== undefined) w.push(eq(invocations.outcome, f.outcome));
  if (f.from !== undefined) w.push(gte(invocations.startedAt, f.from));
  if (f.to !== undefined) w.push(lte(invocations.startedAt, f.to));
  return and(...w);
}

function capWhere(f: AuditPageFilter): SQL | undefined {
  const w: SQL[] = [];
  if (f.extension !== undefined) w.push(eq(capAudit.extension, f.extension));
  if (f.session !== undefined) w.push(eq(capAudit.sessionId, f.session));
  if (f.decision !== undefined) w.push(eq(capAudit.decision, f.decision));
  if (f.from !== undefined) w.push(gte(capAudit.at, f.from));
  if (f.to !== undefined) w.push(lte(capAudit.at, f.to));
  return and(...w);
}

/** One page of each table, newest first. */
export function auditPage(store: Store, f: AuditPageFilter): AuditPage {
  const offset = (f.page - 1) * PAGE_SIZE;
  const ledger = store.orm
    .select()
    .from(invocations)
    .where(ledgerWhere(f))
    .orderBy(desc(invocations.id))
    .limit(PAGE_SIZE + 1)
    .offset(offset)
    .all();
  const capabilities = store.orm
    .select()
    .from(capAudit)
    .where(capWhere(f))
    .orderBy(desc(capAudit.id))
    .limit(PAGE_SIZE + 1)
    .offset(offset)
    .all();
  return {
    ledger: ledger.slice(0, PAGE_SIZE),
    capabilities: capabilities.slice(0, PAGE_SIZE),
    more: ledger.length > PAGE_SIZE || capabilities.length > PAGE_SIZE,
  };
}

export interface CallDetail {
  readonly invocation: LedgerRow;
  readonly capabilities: readonly CapRow[];
  /** The hooks asked about this call, and (for a hook's own invocation) the answer it gave. */
  readonly traces: readonly TraceRow[];
}

/** One ledger row with what it did; null when there is none by that id. */
export function callDetail(store: Store, id: number): CallDetail | null {
  const invocation = store.orm.select().from(invocations).where(eq(invocations.id, id)).get();
  if (invocation === undefined) return null;
  const capabilities = store.orm
    .select()
    .from(capAudit)
    .where(eq(capAudit.invocationId, id))
    .orderBy(capAudit.id)
    .all();
  const traces = store.orm
    .select()
    .from(hookTraces)
    .where(or(eq(hookTraces.aboutInvocationId, id), eq(hookTraces.hookInvocationId, id)))
    .orderBy(hookTraces.at, hookTraces.id)
    .all();
  return { invocation, capabilities, traces };
}

/** One extension's activity in each time bucket. */
export interface ActivitySeries {
  readonly extension: string;
  readonly calls: number[];
  readonly refusals: number[];
  readonly crashes: number[];
}

export interface Activity {
  readonly from: number;
  readonly to: number;
  readonly buckets: number;
  readonly series: readonly ActivitySeries[];
}

/** The ledger's outcomes the chart counts as crashes. */
export const CRASH_OUTCOMES = ["crashed", "timeout"] as const;

/**
 * Calls (ledger rows), refusals (denied capability calls) and crashes (calls
 * that ended crashed or timed out) per extension, in `buckets` equal slices of
 * the filter's time range (without one: from the oldest matching row to now).
 */
export function activity(store: Store, f: AuditPageFilter, buckets = 24, now = Date.now()): Activity {
  const lw = ledgerWhere({ ...f, outcome: undefined });
  const cw = capWhere({ ...f, decision: "denied" });
  const oldest = Math.min(
    store.orm
      .select({ at: sql<number | null>`min(${invocations.startedAt})` })
      .from(invocations)
      .where(lw)
      .get()?.at ?? now,
    store.orm
      .select({ at: sql<number | null>`min(${capAudit.at})` })
      .from(capAudit)
      .where(cw)
      .get()?.at ?? now,
  );
  const from = f.from ?? oldest;
  const to = Math.max(f.to ?? now, from + 1);
  const width = Math.max(1, Math.ceil((to - from + 1) / buckets));
  const byExtension = new Map<string, ActivitySeries>();
  const seriesOf = (extension: string) => {
    let s = byExtension.get(extension);
    if (s === undefined) {
      s = {
        extension,
        calls: new Array<number>(buckets).fill(0),
        refusals: new Array<number>(buckets).fill(0),
        crashes: new Array<number>(buckets).fill(0),
      };
      byExtension.set(extension, s);
    }
    return s;
  };
  const slot = (at: number) => Math.min(buckets - 1, Math.max(0, Math.floor((at - from) / width)));
  const inRange = (at: number) => at >= from && at <= to;
  const ledgerBucket = sql<number>`(${invocations.startedAt} - ${from}) / ${width}`;
  const calls = store.orm
    .select({
      extension: invocations.extension,
      bucket: ledgerBucket,
      n: count(),
      crashes: sql<number>`sum(case when ${invocations.outcome} in ('crashed', 'timeout') then 1 else 0 end)`,
      at: sql<number>`min(${invocations.startedAt})`,
    })
    .from(invocations)
    .where(lw)
    .groupBy(invocations.extension, ledgerBucket)
    .all();
  for (const r of calls) {
    if (!inRange(r.at)) continue;
    const s = seriesOf(r.extension);
    s.calls[slot(r.at)]! += r.n;
    s.crashes[slot(r.at)]! += Number(r.crashes);
  }
  const capBucket = sql<number>`(${capAudit.at} - ${from}) / ${width}`;
  const refusals = store.orm
    .select({ extension: capAudit.extension, bucket: capBucket, n: count(), at: sql<number>`min(${capAudit.at})` })
    .from(capAudit)
    .where(cw)
    .groupBy(capAudit.extension, capBucket)
    .all();
  for (const r of refusals) {
    if (!inRange(r.at)) continue;
    seriesOf(r.extension).refusals[slot(r.at)]! += r.n;
  }
  const series = [...byExtension.values()].sort((a, b) =>
    a.extension < b.extension ? -1 : a.extension > b.extension ? 1 : 0,
  );
  return { from, to, buckets, series };
}
