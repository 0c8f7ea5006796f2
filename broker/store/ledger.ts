/**
 * The one writer of the invocation ledger and the capability audit.
 *
 * `begin` inserts the invocation row at once (its id is needed by audit rows
 * made during the call; in WAL mode with synchronous=NORMAL a commit is a
 * write to the WAL, not an fsync — `make bench` measures it). Finishes and
 * audit rows are queued and written together in one transaction on the next
 * turn of the event loop, off the caller's path. Rows left "running" by a
 * broker that died are closed as `lost` when the next broker opens the store.
 */
import { readFileSync } from "node:fs";
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Statement } from "better-sqlite3";
import type { Store } from "./open.js";
import { capAudit, invocations } from "./schema.js";

export interface InvocationStart {
  readonly sessionId: string;
  readonly extension: string;
  readonly kind: string;
  readonly name: string;
  readonly strand: string;
  /** The operator bypassed the hook bus for this call (`tether call --no-hooks`). */
  readonly hooksBypassed?: boolean;
}

export interface AuditRow {
  readonly invocationId: number | null;
  readonly sessionId: string;
  readonly extension: string;
  readonly capability: string;
  readonly target: string;
  readonly decision: "allowed" | "denied";
  readonly rule: string;
  readonly bytes: number;
  /** The secret injected into the request, by name; never a value. */
  readonly secret?: string;
}

/** One hook's answer to one event, as the bus traced it. */
export interface HookTrace {
  readonly sessionId: string;
  readonly event: string;
  readonly subject: string;
  readonly aboutInvocationId: number | null;
  readonly hookInvocationId: number | null;
  readonly extension: string;
  readonly answer: string;
  readonly detail: string;
  readonly durationMs: number;
}

export const RUNNING = "running";
export const LOST = "lost";

/** "pid:starttime" of a process, or null when it is gone (the start time defeats pid reuse). */
function processIdentity(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return `${pid}:${fields[19] ?? "?"}`;
  } catch {
    return null;
  }
}

/** Whether the broker that owns a running row is still alive. */
function ownerAlive(owner: string | null): boolean {
  if (owner === null) return false;
  const pid = Number(owner.split(":")[0]);
  return Number.isInteger(pid) && pid > 0 && processIdentity(pid) === owner;
}

const SELF = processIdentity(process.pid) ?? `${process.pid}:?`;

/** How long finishes and audit rows may wait to be written together. */
export const FLUSH_EVERY_MS = 20;

export class Ledger {
  readonly #store: Store;
  // Prepared once: these run on every call and every capability call.
  readonly #insertStart: Statement;
  readonly #updateFinish: Statement;
  readonly #insertAudit: Statement;
  readonly #insertTrace: Statement;
  #traces: Array<HookTrace & { at: number }> = [];
  #finishes: Array<{ id: number; finishedAt: number; durationMs: number; outcome: string }> = [];
  #audits: Array<AuditRow & { at: number }> = [];
  #scheduled = false;
  #closed = false;
  readonly #starts = new Map<number, number>();

  constructor(store: Store) {
    this.#store = store;
    const db = store.sqlite;
    this.#insertStart = db.prepare(
      "insert into invocations (session_id, extension, kind, name, strand, " +
        "started_at, outcome, owner, hooks_bypassed) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    this.#updateFinish = db.prepare(
      "update invocations set finished_at = ?, duration_ms = ?, outcome = ? where id = ?",
    );
    this.#insertAudit = db.prepare(
      "insert into cap_audit (invocation_id, session_id, extension, capability, " +
        "target, decision, rule, bytes, secret, at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    this.#insertTrace = db.prepare(
      "insert into hook_traces (session_id, event, subject, about_invocation_id, hook_invocation_id, " +
        "extension, answer, detail, duration_ms, at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    // A broker that died mid-call left rows running: nobody will finish them.
    // Rows of brokers still alive (another `tether serve`) are theirs to finish.
    const running = store.orm
      .select({ id: invocations.id, owner: invocations.owner })
      .from(invocations)
      .where(eq(invocations.outcome, RUNNING))
      .all();
    const dead = running.filter((r) => !ownerAlive(r.owner)).map((r) => r.id);
    if (dead.length > 0) {
      store.orm
        .update(invocations)
        .set({ outcome: LOST, finishedAt: Date.now() })
        .where(and(eq(invocations.outcome, RUNNING), inArray(invocations.id, dead)))
        .run();
    }
  }

  /** Records that an invocation started; returns its ledger id. */
  begin(start: InvocationStart): number {
    const startedAt = Date.now();
    const id = Number(
      this.#insertStart.run(
        start.sessionId,
        start.extension,
        start.kind,
        start.name,
        start.strand,
        startedAt,
        RUNNING,
        SELF,
        start.hooksBypassed === true ? 1 : 0,
      ).lastInsertRowid,
    );
    this.#starts.set(id, startedAt);
    return id;
  }

  /** Records how an invocation ended ("ok" or its error code). */
  finish(id: number, outcome: string): void {
    const finishedAt = Date.now();
    const startedAt = this.#starts.get(id) ?? finishedAt;
    this.#starts.delete(id);
    this.#finishes.push({ id, finishedAt, durationMs: finishedAt - startedAt, outcome });
    this.#schedule();
  }

  /** Records one capability decision. */
  audit(row: AuditRow): void {
    this.#audits.push({ ...row, at: Date.now() });
    this.#schedule();
  }

  /** Records the hooks' answers to one event (bounded texts). */
  trace(rows: readonly HookTrace[]): void {
    const at = Date.now();
    for (const row of rows)
      this.#traces.push({ ...row, subject: row.subject.slice(0, 512), detail: row.detail.slice(0, 1024), at });
    if (rows.length > 0) this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // A short batch window: one transaction for many rows, off every caller's path.
    setTimeout(() => this.flush(), FLUSH_EVERY_MS).unref();
  }

  /**
   * Writes what is queued and stops: the store is about to close. Rows that
   * arrive later are dropped (the broker waits for its work first, so none
   * should), never written to a closed database by a timer.
   */
  close(): void {
    this.flush();
    this.#closed = true;
  }

  /** Writes everything queued, in one transaction. */
  flush(): void {
    this.#scheduled = false;
    if (this.#closed) {
      this.#finishes = [];
      this.#audits = [];
      this.#traces = [];
      return;
    }
    if (this.#finishes.length === 0 && this.#audits.length === 0 && this.#traces.length === 0) return;
    const finishes = this.#finishes;
    const audits = this.#audits;
    const traces = this.#traces;
    this.#finishes = [];
    this.#audits = [];
    this.#traces = [];
    this.#store.sqlite.transaction(() => {
      for (const f of finishes) this.#updateFinish.run(f.finishedAt, f.durationMs, f.outcome, f.id);
      for (const a of audits)
        this.#insertAudit.run(
          a.invocationId,
          a.sessionId,
          a.extension,
          a.capability,
          a.target,
          a.decision,
          a.rule,
          a.bytes,
          a.secret ?? null,
          a.at,
        );
      for (const t of traces) {
        this.#insertTrace.run(
          t.sessionId,
          t.event,
          t.subject,
          t.aboutInvocationId,
          t.hookInvocationId,
          t.extension,
          t.answer,
          t.detail,
          t.durationMs,
          t.at,
        );
      }
    })();
  }

  /** Counts rows (for tests and `tether doctor`). */
  counts(): { invocations: number; audits: number } {
    const orm = this.#store.orm;
    const inv = orm.select({ n: sql<number>`count(*)` }).from(invocations).get()?.n ?? 0;
    const aud = orm.select({ n: sql<number>`count(*)` }).from(capAudit).get()?.n ?? 0;
    return { invocations: inv, audits: aud };
  }
}
