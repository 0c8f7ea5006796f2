/**
 * Copies one host's ledger (its home SQLite store: invocations, cap_audit,
 * hook_traces) to the fleet's tables in PostgreSQL, in batches, off every
 * caller's path: the local Ledger stays the synchronous writer, and the fleet
 * sees its rows within a tick or so.
 *
 * Each tick reads, in one local read transaction, the rows past the
 * watermarks (per table, the highest local id shipped; for invocations, the
 * highest commit order, `seq`) and the rows it shipped
 * while "running" that have finished since, and writes them in one PostgreSQL
 * transaction: one multi-row INSERT per table. The watermarks move only after
 * the commit, so a failed tick (the server down) ships the same rows on the
 * next one. They start from the fleet (`max(id)` of this host's rows), so a
 * host restarting after a crash ships what it had not and nothing twice.
 *
 * Audit and trace ids are watermarks because SQLite serialises writers: a
 * row with a lower id is never committed after one with a higher id.
 * Invocation ids are reserved ahead by each process (store/ledger.ts), so two
 * brokers on one home commit theirs out of id order; `seq` is assigned under
 * the write lock, in commit order.
 */
import type { Statement } from "better-sqlite3";
import type pg from "pg";
import type { LogFields } from "../../base/log.js";
import { RUNNING } from "../ledger.js";
import type { Store } from "../open.js";
import type { PgStore } from "./open.js";
import { explainPgError } from "./rights.js";

export interface LedgerShipperOptions {
  /** How often a tick ships what is new (ms; default 50). */
  readonly everyMs?: number;
  /** Where a failed tick is reported (once per outage) and its recovery. */
  readonly log?: (msg: string, fields: LogFields) => void;
}

export interface ShipperStats {
  /** Rows written to the fleet since this shipper started (re-shipped finishes included). */
  readonly shipped: number;
  /** Rows committed locally and not yet in the fleet (new rows; finishes of shipped running rows not counted). */
  readonly lagRows: number;
}

interface Table {
  readonly local: string;
  readonly fleet: string;
  /** Columns in both, `id` first; the fleet's adds `host`. */
  readonly columns: readonly string[];
  /** What a row already in the fleet becomes. */
  readonly onConflict: string;
}

const INVOCATIONS: Table = {
  local: "invocations",
  fleet: "fleet_invocations",
  columns: [
    "id",
    "session_id",
    "extension",
    "kind",
    "name",
    "strand",
    "started_at",
    "finished_at",
    "duration_ms",
    "outcome",
    "owner",
    "hooks_bypassed",
    "seq",
  ],
  // A row moves from running to its end once: a finish never overwrites an
  // end already there (a takeover's 'lost', or a duplicate re-ship).
  onConflict:
    `ON CONFLICT (host, id) DO UPDATE SET finished_at = excluded.finished_at, duration_ms = ` +
    `excluded.duration_ms, outcome = excluded.outcome WHERE fleet_invocations.outcome = '${RUNNING}'`,
};
const CAP_AUDIT: Table = {
  local: "cap_audit",
  fleet: "fleet_cap_audit",
  columns: [
    "id",
    "invocation_id",
    "session_id",
    "extension",
    "capability",
    "target",
    "decision",
    "rule",
    "bytes",
    "secret",
    "at",
  ],
  onConflict: "ON CONFLICT (host, id) DO NOTHING",
};
const HOOK_TRACES: Table = {
  local: "hook_traces",
  fleet: "fleet_hook_traces",
  columns: [
    "id",
    "session_id",
    "event",
    "subject",
    "about_invocation_id",
    "hook_invocation_id",
    "extension",
    "answer",
    "detail",
    "duration_ms",
    "at",
  ],
  onConflict: "ON CONFLICT (host, id) DO NOTHING",
};

/** PostgreSQL's limit on one statement's parameters; $1 is the host. */
const MAX_PARAMS = 65_535;
const rowsPerStatement = (t: Table): number => Math.floor((MAX_PARAMS - 1) / t.columns.length);

type Row = Record<string, unknown>;

interface Watermarks {
  invocations: number;
  capAudit: number;
  hookTraces: number;
}

interface Batch {
  readonly invocations: Row[];
  readonly finished: Row[];
  readonly capAudit: Row[];
  readonly hookTraces: Row[];
  /** A table had more than one statement's rows: ship again at once. */
  readonly full: boolean;
}

const IDLE: Batch = { invocations: [], finished: [], capAudit: [], hookTraces: [], full: false };

export class LedgerShipper {
  readonly #local: Store;
  readonly #fleet: PgStore;
  readonly #host: string;
  readonly #everyMs: number;
  readonly #log: (msg: string, fields: LogFields) => void;
  readonly #newInvocations: Statement;
  readonly #finishedInvocations: Statement;
  readonly #newCapAudit: Statement;
  readonly #newHookTraces: Statement;
  readonly #localMax: Statement;
  /** Null until read from the fleet (the first tick that reaches it). */
  #marks: Watermarks | null = null;
  /** Local ids shipped with outcome running: re-shipped when they finish. */
  readonly #running = new Set<number>();
  #shipped = 0;
  #failing = false;
  #timer: NodeJS.Timeout | null = null;
  #stopped = false;
  /** Ticks run one at a time, in call order (the timer's and flush's). */
  #chain: Promise<unknown> = Promise.resolve();

  constructor(local: Store, fleet: PgStore, host: string, options: LedgerShipperOptions = {}) {
    this.#local = local;
    this.#fleet = fleet;
    this.#host = host;
    this.#everyMs = options.everyMs ?? 50;
    this.#log = options.log ?? (() => {});
    const db = local.sqlite;
    const select = (t: Table): string => t.columns.join(", ");
    this.#newInvocations = db.prepare(
      `SELECT ${select(INVOCATIONS)} FROM invocations WHERE seq > ? ORDER BY seq LIMIT ?`,
    );
    this.#finishedInvocations = db.prepare(
      `SELECT ${select(INVOCATIONS)} FROM invocations WHERE id IN (SELECT ` +
        `value FROM json_each(?)) AND outcome != '${RUNNING}' ORDER BY id LIMIT ?`,
    );
    this.#newCapAudit = db.prepare(`SELECT ${select(CAP_AUDIT)} FROM cap_audit WHERE id > ? ORDER BY id LIMIT ?`);
    this.#newHookTraces = db.prepare(`SELECT ${select(HOOK_TRACES)} FROM hook_traces WHERE id > ? ORDER BY id LIMIT ?`);
    this.#localMax = db.prepare(
      "SELECT (SELECT coalesce(max(seq), 0) FROM invocations) AS invocations, (SELECT coalesce(max(id), " +
        "0) FROM cap_audit) AS capAudit, (SELECT coalesce(max(id), 0) FROM hook_traces) AS hookTraces",
    );
  }

  /** Ships in the background every `everyMs` (the timer does not keep the process alive). */
  start(): void {
    if (this.#timer !== null || this.#stopped) return;
    this.#schedule(this.#everyMs);
  }

  /**
   * Ships everything committed locally when called (the local Ledger's own
   * queue is its to flush first). Rejects when the fleet cannot be reached;
   * nothing is lost then, the next tick or flush ships it.
   */
  async flush(): Promise<void> {
    const target = this.#localMax.get() as Watermarks;
    await this.#serial(async () => {
      for (;;) {
        const batch = await this.#tick();
        const marks = this.#marks!;
        if (
          !batch.full &&
          marks.invocations >= target.invocations &&
          marks.capAudit >= target.capAudit &&
          marks.hookTraces >= target.hookTraces
        )
          return;
      }
    });
  }

  /** Stops the background ticks, then flushes (when that fails the rows stay local: a later start ships them). */
  async close(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.flush();
  }

  get stats(): ShipperStats {
    let lagRows = 0;
    if (this.#local.sqlite.open) {
      const max = this.#localMax.get() as Watermarks;
      const marks = this.#marks ?? { invocations: 0, capAudit: 0, hookTraces: 0 };
      lagRows =
        Math.max(0, max.invocations - marks.invocations) +
        Math.max(0, max.capAudit - marks.capAudit) +
        Math.max(0, max.hookTraces - marks.hookTraces);
    }
    return { shipped: this.#shipped, lagRows };
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      // A tick queued behind close's flush would find the local store closed.
      this.#serial(() => (this.#stopped ? Promise.resolve(IDLE) : this.#tick())).then(
        (batch) => this.#schedule(batch.full ? 0 : this.#everyMs), // behind: the next batch at once
        () => this.#schedule(this.#everyMs),
      );
    }, ms);
    this.#timer.unref();
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(fn);
    this.#chain = run.catch(() => {});
    return run;
  }

  /** One batch: read locally, write to the fleet in one transaction, then move the watermarks. */
  async #tick(): Promise<Batch> {
    try {
      const marks = this.#marks ?? (await this.#loadMarks());
      const batch = this.#read(marks);
      if (batch.invocations.length + batch.finished.length + batch.capAudit.length + batch.hookTraces.length > 0)
        await this.#write(batch);
      for (const row of batch.finished) this.#running.delete(row.id as number);
      for (const row of batch.invocations) if (row.outcome === RUNNING) this.#running.add(row.id as number);
      const last = (rows: Row[], mark: number, key = "id"): number =>
        rows.length > 0 ? (rows[rows.length - 1]![key] as number) : mark;
      marks.invocations = last(batch.invocations, marks.invocations, "seq");
      marks.capAudit = last(batch.capAudit, marks.capAudit);
      marks.hookTraces = last(batch.hookTraces, marks.hookTraces);
      this.#shipped +=
        batch.invocations.length + batch.finished.length + batch.capAudit.length + batch.hookTraces.length;
      if (this.#failing) {
        this.#failing = false;
        this.#log("fleet ledger: shipping again", { host: this.#host, store: this.#fleet.shown });
      }
      return batch;
    } catch (err) {
      if (!this.#failing) {
        this.#failing = true;
        this.#log("fleet ledger: cannot ship to the fleet store; rows stay local and are retried every tick", {
          host: this.#host,
          store: this.#fleet.shown,
          error: explainPgError(err),
        });
      }
      throw err;
    }
  }

  /** Where this host's rows in the fleet end, and which it left running. */
  async #loadMarks(): Promise<Watermarks> {
    const pool = this.#fleet.pool;
    const max = await pool.query<{ invocations: string; cap_audit: string; hook_traces: string }>(
      `SELECT greatest(
                (SELECT coalesce(max(seq), 0) FROM fleet_invocations WHERE host = $1),
                -- rows shipped before seq existed: their id was their commit order
                (SELECT coalesce(max(id), 0) FROM fleet_invocations WHERE host = $1 AND seq IS NULL)
              ) AS invocations,
              (SELECT coalesce(max(id), 0) FROM fleet_cap_audit WHERE host = $1) AS cap_audit,
              (SELECT coalesce(max(id), 0) FROM fleet_hook_traces WHERE host = $1) AS hook_traces`,
      [this.#host],
    );
    const running = await pool.query<{ id: string }>(
      "SELECT id FROM fleet_invocations WHERE host = $1 AND outcome = $2",
      [this.#host, RUNNING],
    );
    for (const r of running.rows) this.#running.add(Number(r.id));
    const row = max.rows[0]!;
    const marks = {
      invocations: Number(row.invocations),
      capAudit: Number(row.cap_audit),
      hookTraces: Number(row.hook_traces),
    };
    const local = this.#localMax.get() as Watermarks;
    if (
      marks.invocations > local.invocations ||
      marks.capAudit > local.capAudit ||
      marks.hookTraces > local.hookTraces
    ) {
      // Another home under this host's name, or a home restored from an old backup: its
      // rows up to the fleet's ids would be taken for shipped. Said, not guessed around.
      this.#log(
        "fleet ledger: the fleet holds more of this host's rows than " +
          "its local store; rows below the fleet's ids are not shipped",
        {
          host: this.#host,
          fleet: JSON.stringify(marks),
          local: JSON.stringify(local),
        },
      );
    }
    this.#marks = marks;
    return marks;
  }

  #read(marks: Watermarks): Batch {
    return this.#local.sqlite.transaction((): Batch => {
      const invLimit = rowsPerStatement(INVOCATIONS);
      // Finishes first: they are what the fleet shows wrong (as running) now.
      const finished =
        this.#running.size === 0
          ? []
          : (this.#finishedInvocations.all(JSON.stringify([...this.#running]), invLimit) as Row[]);
      const room = invLimit - finished.length;
      const invocations = room === 0 ? [] : (this.#newInvocations.all(marks.invocations, room) as Row[]);
      const capAudit = this.#newCapAudit.all(marks.capAudit, rowsPerStatement(CAP_AUDIT)) as Row[];
      const hookTraces = this.#newHookTraces.all(marks.hookTraces, rowsPerStatement(HOOK_TRACES)) as Row[];
      const full =
        finished.length + invocations.length === invLimit ||
        capAudit.length === rowsPerStatement(CAP_AUDIT) ||
        hookTraces.length === rowsPerStatement(HOOK_TRACES);
      return { invocations, finished, capAudit, hookTraces, full };
    })();
  }

  async #write(batch: Batch): Promise<void> {
    const client = await this.#fleet.pool.connect();
    // A checked-out client's lost connection is also emitted as an event; the failing query already reports it.
    const ignore = (): void => {};
    client.on("error", ignore);
    try {
      await client.query("BEGIN");
      await this.#insert(client, INVOCATIONS, [...batch.finished, ...batch.invocations]);
      await this.#insert(client, CAP_AUDIT, batch.capAudit);
      await this.#insert(client, HOOK_TRACES, batch.hookTraces);
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      client.off("error", ignore);
      client.release(err instanceof Error ? err : true); // a broken connection is not reused
      throw err;
    }
    client.off("error", ignore);
    client.release();
  }

  async #insert(client: pg.PoolClient, table: Table, rows: Row[]): Promise<void> {
    if (rows.length === 0) return;
    const width = table.columns.length;
    const params: unknown[] = [this.#host];
    const tuples: string[] = [];
    for (const row of rows) {
      const at = params.length;
      tuples.push(`($1, ${table.columns.map((_, c) => `$${at + 1 + c}`).join(", ")})`);
      for (const column of table.columns)
        params.push(column === "hooks_bypassed" ? row[column] === 1 || row[column] === true : row[column]);
    }
    if (params.length > MAX_PARAMS)
      throw new Error(
        `fleet ledger: ${rows.length} rows of ${table.fleet} in ` +
          `one statement (${params.length} parameters; ${width} a row)`,
      );
    await client.query(
      `INSERT INTO ${table.fleet} (host, ${table.columns.join(", ")}) VALUES ${tuples.join(", ")} ${table.onConflict}`,
      params,
    );
  }
}
