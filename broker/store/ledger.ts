/**
 * The one writer of the invocation ledger and the capability audit.
 *
 * `begin` hands out an id from a block reserved ahead and appends the start
 * to the start journal (store/start-journal.ts: the starts held so far in
 * one write before a frame leaves — a turn's first frame to each satellite,
 * then the rest at the turn's end; no database commit on the call's path).
 * Starts, finishes and audit rows are queued and written together in one
 * transaction on a short timer, off the caller's path; the journal is
 * emptied once they are committed. A start whose broker died before that is
 * read back from its journal at the next open and recorded `lost`, as are
 * rows a dead broker left "running". The windows:
 * none for `lost` (a call is journaled before it is sent), at most one flush
 * (FLUSH_EVERY_MS) for a finish or an audit row.
 */
import { dirname, join } from "node:path";
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Statement, Transaction } from "better-sqlite3";
import type { Store } from "./open.js";
import { ownerAlive, SELF } from "./process-identity.js";
import { capAudit, invocations } from "./schema.js";
import { type JournalStart, StartJournal } from "./start-journal.js";

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

/** How long finishes and audit rows may wait to be written together. */
export const FLUSH_EVERY_MS = 20;

/** The journal beside a store's database file. */
export function journalDir(store: Store): string {
  return join(dirname(store.path), "ledger-journal");
}

/** Ids reserved at a time: a few at first (a one-call CLI leaves a small gap), more as calls keep coming. */
const FIRST_BLOCK = 8;
const MAX_BLOCK = 1024;

interface Finish {
  readonly finishedAt: number;
  readonly durationMs: number;
  readonly outcome: string;
}

/** A start not yet committed, with its finish when it came first. */
interface PendingStart {
  readonly row: JournalStart;
  finish: Finish | null;
}

export class Ledger {
  readonly #store: Store;
  // Prepared once: these run in every batch.
  readonly #insertStart: Statement;
  readonly #insertOrphan: Statement;
  readonly #updateFinish: Statement;
  readonly #insertAudit: Statement;
  readonly #insertTrace: Statement;
  readonly #maxSeq: Statement;
  readonly #write: Transaction<() => void>;
  readonly #reserve: Transaction<(count: number) => number>;
  readonly #journal: StartJournal;
  #traces: Array<HookTrace & { at: number }> = [];
  #finishes: Array<Finish & { id: number }> = [];
  #audits: Array<AuditRow & { at: number }> = [];
  #pending = new Map<number, PendingStart>();
  #scheduled = false;
  #closed = false;
  /** When each start already committed while still running began (a finish before its batch reads its queued start). */
  readonly #starts = new Map<number, number>();
  /** The next reserved id and the last; next > last: none left. */
  #next = 1;
  #last = 0;
  #block = FIRST_BLOCK;

  constructor(store: Store) {
    this.#store = store;
    const db = store.sqlite;
    const columns =
      "invocations (id, session_id, extension, kind, name, strand, started_at, " +
      "hooks_bypassed, outcome, finished_at, duration_ms, owner, seq) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
    this.#insertStart = db.prepare(`insert into ${columns}`);
    // A journaled start whose row was committed before its broker died is already there.
    this.#insertOrphan = db.prepare(`insert or ignore into ${columns}`);
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
    this.#maxSeq = db.prepare("select coalesce(max(seq), 0) as seq from invocations").pluck();
    const lastReserved = db.prepare("select last from ledger_reservations where name = 'invocations'").pluck();
    const maxId = db.prepare("select coalesce(max(id), 0) from invocations").pluck();
    const saveReserved = db.prepare(
      "insert into ledger_reservations (name, last) values ('invocations', ?) " +
        "on conflict (name) do update set last = excluded.last",
    );
    // Ids above every row and every block another process reserved (rows written without
    // a reservation, by an older broker or by hand, count too).
    this.#reserve = db.transaction((count: number): number => {
      const from = Math.max(Number(lastReserved.get() ?? 0), Number(maxId.get())) + 1;
      saveReserved.run(from + count - 1);
      return from;
    });
    this.#write = db.transaction(() => this.#writeQueued());

    // A broker that died mid-call left starts in its journal and rows running: nobody will
    // finish them. Rows and journals of brokers still alive (another `tether serve`) are theirs.
    const dir = journalDir(store);
    const orphans = StartJournal.orphans(dir);
    if (orphans.starts.length > 0) {
      const at = Date.now();
      db.transaction(() => {
        let seq = Number(this.#maxSeq.get());
        for (const [id, session, extension, kind, name, strand, startedAt, bypassed] of orphans.starts) {
          const args = [id, session, extension, kind, name, strand, startedAt, bypassed ? 1 : 0];
          if (this.#insertOrphan.run(...args, LOST, at, null, null, seq + 1).changes > 0) seq++;
        }
      }).immediate();
    }
    orphans.remove();
    // The literal, not a parameter: only then can SQLite read the partial index of running rows
    // (schema.ts) rather than every row the home ever recorded.
    const running = db.prepare(`select id, owner from invocations where outcome = '${RUNNING}'`).all() as Array<{
      id: number;
      owner: string | null;
    }>;
    const dead = running.filter((r) => !ownerAlive(r.owner)).map((r) => r.id);
    if (dead.length > 0) {
      store.orm
        .update(invocations)
        .set({ outcome: LOST, finishedAt: Date.now() })
        .where(and(eq(invocations.outcome, RUNNING), inArray(invocations.id, dead)))
        .run();
    }
    this.#journal = StartJournal.open(dir, SELF);
  }

  /** Records that an invocation started (in the journal, before it is sent); returns its ledger id. */
  begin(start: InvocationStart): number {
    if (this.#closed) throw new Error("the ledger is closed: no invocation may start");
    if (this.#next > this.#last) {
      this.#next = this.#reserve.immediate(this.#block);
      this.#last = this.#next + this.#block - 1;
      this.#block = Math.min(MAX_BLOCK, this.#block * 2);
    }
    const id = this.#next++;
    const startedAt = Date.now();
    const row: JournalStart = [
      id,
      start.sessionId,
      start.extension,
      start.kind,
      start.name,
      start.strand,
      startedAt,
      start.hooksBypassed === true,
    ];
    this.#journal.append(row);
    this.#pending.set(id, { row, finish: null });
    this.#schedule();
    return id;
  }

  /**
   * Writes the starts held so far to the journal: what must be on disk
   * before a frame leaves for a satellite (a satellite connection calls it
   * before each write; the turn's end does otherwise).
   */
  writeStarts(): void {
    this.#journal.write();
  }

  /** Records how an invocation ended ("ok" or its error code). */
  finish(id: number, outcome: string): void {
    const finishedAt = Date.now();
    const pending = this.#pending.get(id);
    let startedAt: number;
    if (pending !== undefined) startedAt = pending.row[6];
    else {
      startedAt = this.#starts.get(id) ?? finishedAt;
      this.#starts.delete(id);
    }
    const finish = { finishedAt, durationMs: finishedAt - startedAt, outcome };
    if (pending !== undefined) pending.finish = finish;
    else this.#finishes.push({ id, ...finish });
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
    this.#journal.close();
  }

  /** Writes everything queued, in one transaction, then empties the journal. */
  flush(): void {
    this.#scheduled = false;
    if (this.#closed) {
      this.#pending = new Map();
      this.#finishes = [];
      this.#audits = [];
      this.#traces = [];
      return;
    }
    if (this.#pending.size + this.#finishes.length + this.#audits.length + this.#traces.length === 0) return;
    // Immediate: the batch's commit order (seq) is read under the write lock it commits with.
    this.#write.immediate();
    // Starts committed still running: their finish comes later, and needs when they began.
    for (const [id, { row, finish }] of this.#pending) if (finish === null) this.#starts.set(id, row[6]);
    this.#pending = new Map();
    this.#finishes = [];
    this.#audits = [];
    this.#traces = [];
    this.#journal.clear();
  }

  /** Inside the batch's transaction; the queues are emptied only once it commits (a failed batch is retried). */
  #writeQueued(): void {
    const pending = this.#pending;
    const finishes = this.#finishes;
    const audits = this.#audits;
    const traces = this.#traces;
    let seq = Number(this.#maxSeq.get());
    // Starts first: audit rows and traces name them.
    for (const [, { row, finish }] of pending) {
      const [id, session, extension, kind, name, strand, startedAt, bypassed] = row;
      this.#insertStart.run(
        id,
        session,
        extension,
        kind,
        name,
        strand,
        startedAt,
        bypassed ? 1 : 0,
        finish?.outcome ?? RUNNING,
        finish?.finishedAt ?? null,
        finish?.durationMs ?? null,
        SELF,
        ++seq,
      );
    }
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
  }

  /** Counts rows (for tests and `tether doctor`). */
  counts(): { invocations: number; audits: number } {
    const orm = this.#store.orm;
    const inv = orm.select({ n: sql<number>`count(*)` }).from(invocations).get()?.n ?? 0;
    const aud = orm.select({ n: sql<number>`count(*)` }).from(capAudit).get()?.n ?? 0;
    // Queued rows are not in the database yet: counted beside it.
    return { invocations: inv + this.#pending.size, audits: aud + this.#audits.length };
  }
}
