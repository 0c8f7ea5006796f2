/**
 * Which host of the fleet serves a session: a lease in `session_leases`,
 * renewed by a heartbeat while the host lives, so a session is open on one
 * host at a time and a host that dies gives it up when its lease expires.
 *
 * Every time is the PostgreSQL server's clock (`clock_timestamp()`), never a
 * host's, so skew between hosts cannot shorten or stretch a lease.
 *
 * The crash guarantee: a host that takes over an expired lease marks, in the
 * same transaction, the dead host's fleet_invocations rows of that session
 * still "running" as "lost" — a started call never stays running forever.
 */
import type { LogFields } from "../../base/log.js";
import { BrokerCode, TetherError } from "../../base/errors.js";
import { LOST, RUNNING } from "../ledger.js";
import type { PgStore } from "./open.js";

/** A session lease's length unless the fleet says otherwise (TETHER_FLEET_LEASE_MS). */
export const DEFAULT_LEASE_MS = 15_000;

export interface SessionLeasesOptions {
  /** How long a lease lasts without a heartbeat (ms; default 15000); the heartbeat runs every third of it. */
  readonly ttlMs?: number;
  /** Where a failing heartbeat is reported (once per outage). */
  readonly log?: (msg: string, fields: LogFields) => void;
  /** A lease this host held is now another host's (its heartbeat came too late): the session must stop here. */
  readonly onLost?: (sessionId: string) => void;
}

/**
 * A lease's holder is one broker process of a host, "<host>/<pid>" (a host
 * name never holds a "/"): two processes of one host (a `tether serve` and a
 * `tether session status`) do not share a session. The ledger is the host's
 * (one home, one numbering), so a dead holder's calls are found by its host.
 */
export const holderOf = (host: string, pid: number = process.pid): string => `${host}/${pid}`;
const hostOf = (holder: string): string => (holder.includes("/") ? holder.slice(0, holder.lastIndexOf("/")) : holder);
const shownHolder = (holder: string): string =>
  holder.includes("/")
    ? `'${hostOf(holder)}' (broker process ${holder.slice(holder.lastIndexOf("/") + 1)})`
    : `'${holder}'`;

/** The server's clock in ms since the epoch. */
const NOW = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

export class SessionLeases {
  readonly #fleet: PgStore;
  readonly #host: string;
  readonly #ttlMs: number;
  readonly #log: (msg: string, fields: LogFields) => void;
  readonly #onLost: (sessionId: string) => void;
  /** The sessions this broker holds: the heartbeat renews these, not every row naming the host (a previous run's). */
  readonly #held = new Set<string>();
  /** Per held session: until when (this process's monotonic clock) its lease is known to be this host's. */
  readonly #confirmedUntil = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #failing = false;

  constructor(fleet: PgStore, host: string, options: SessionLeasesOptions = {}) {
    this.#fleet = fleet;
    this.#host = host;
    this.#ttlMs = options.ttlMs ?? DEFAULT_LEASE_MS;
    this.#log = options.log ?? (() => {});
    this.#onLost = options.onLost ?? (() => {});
  }

  /** The sessions this host holds now. */
  get held(): ReadonlySet<string> {
    return this.#held;
  }

  /** The holder this broker writes as (`<host>/<pid>`): what fences its writes. */
  get holder(): string {
    return this.#host;
  }

  /**
   * Whether this host may serve the session now: it holds the lease and its
   * last renewal, counted from before it was sent, is younger than the lease
   * less a tenth. A host frozen past its lease (SIGSTOP, a paused VM) serves
   * nothing when it wakes until a renewal answers — and that one finds it lost.
   */
  confirmed(sessionId: string): boolean {
    return this.#held.has(sessionId) && performance.now() < (this.#confirmedUntil.get(sessionId) ?? 0);
  }

  #confirm(sessionId: string, sentAt: number): void {
    this.#confirmedUntil.set(sessionId, sentAt + this.#ttlMs * 0.9);
  }

  /**
   * Takes the session's lease when it is free, expired, or already this
   * host's; otherwise throws session_in_use naming the holder and until when.
   */
  async acquire(sessionId: string): Promise<void> {
    const sentAt = performance.now();
    const client = await this.#fleet.pool.connect();
    // A checked-out client's lost connection is also emitted as an event; the failing query already reports it.
    const ignore = (): void => {};
    client.on("error", ignore);
    let failed: Error | undefined;
    try {
      await client.query("BEGIN");
      // Lock the current lease first, so the holder read here is the one the upsert replaces.
      const old = (
        await client.query<{ host: string; expires: string }>(
          "SELECT host, expires_at AS expires FROM session_leases WHERE session_id = $1 FOR UPDATE",
          [sessionId],
        )
      ).rows[0];
      // Taken only when free, expired or ours; the server's clock decides.
      const taken = (
        await client.query<{ acquired: string }>(
          `INSERT INTO session_leases (session_id, host, acquired_at, expires_at) VALUES ($1, $2, ${NOW}, ${NOW} + $3)
           ON CONFLICT (session_id) DO UPDATE SET
             host = excluded.host,
             acquired_at = CASE WHEN session_leases.host = excluded.host ` +
            `THEN session_leases.acquired_at ELSE excluded.acquired_at END,
             expires_at = excluded.expires_at
           WHERE session_leases.expires_at < excluded.acquired_at OR session_leases.host = excluded.host
           RETURNING acquired_at AS acquired`,
          [sessionId, this.#host, this.#ttlMs],
        )
      ).rows[0];
      if (taken === undefined) {
        // Refused: the holder is `old`, or one that inserted the lease after the lock was asked for.
        const holder =
          old ??
          (
            await client.query<{ host: string; expires: string }>(
              "SELECT host, expires_at AS expires FROM session_leases WHERE session_id = $1",
              [sessionId],
            )
          ).rows[0];
        await client.query("ROLLBACK");
        if (holder === undefined)
          throw new Error(`the lease of session '${sessionId}' changed hands while it was being taken; try again`);
        throw new TetherError(
          BrokerCode.sessionInUse,
          `Session '${sessionId}' is open on host ${shownHolder(holder.host)} ` +
            `until ${new Date(Number(holder.expires)).toISOString()}; ` +
            `close it there, or wait for its lease to expire if that host is down`,
        );
      }
      if (old !== undefined && old.host !== this.#host) {
        // Taken over from a host whose lease expired: its calls of this session will never finish.
        await client.query(
          "UPDATE fleet_invocations SET outcome = $1, finished_at " +
            "= $2 WHERE host = $3 AND session_id = $4 AND outcome = $5",
          [LOST, taken.acquired, hostOf(old.host), sessionId, RUNNING],
        );
      }
      await client.query("COMMIT");
      this.#held.add(sessionId);
      this.#confirm(sessionId, sentAt);
      this.#startHeartbeat();
    } catch (err) {
      if (!(err instanceof TetherError)) {
        failed = err instanceof Error ? err : new Error(String(err));
        await client.query("ROLLBACK").catch(() => {});
      }
      throw err;
    } finally {
      client.off("error", ignore);
      client.release(failed ?? false);
    }
  }

  /** Gives the session's lease up (when this host holds it). */
  async release(sessionId: string): Promise<void> {
    this.#held.delete(sessionId);
    this.#confirmedUntil.delete(sessionId);
    if (this.#held.size === 0) this.#stopHeartbeat();
    await this.#fleet.pool.query("DELETE FROM session_leases WHERE session_id = $1 AND host = $2", [
      sessionId,
      this.#host,
    ]);
  }

  /** Renews every lease this host holds; a lease another host took meanwhile is dropped and reported. */
  async heartbeat(): Promise<void> {
    if (this.#held.size === 0) return;
    const sessions = [...this.#held];
    const sentAt = performance.now();
    const { rows } = await this.#fleet.pool.query<{ session_id: string }>(
      `UPDATE session_leases SET expires_at = ${NOW} + $3 WHERE host ` +
        `= $1 AND session_id = ANY($2::text[]) RETURNING session_id`,
      [this.#host, sessions, this.#ttlMs],
    );
    const renewed = new Set(rows.map((r) => r.session_id));
    for (const s of sessions) {
      // Released while the update ran: not lost.
      if (renewed.has(s) && this.#held.has(s)) this.#confirm(s, sentAt);
      if (renewed.has(s) || !this.#held.has(s)) continue;
      this.#held.delete(s);
      this.#confirmedUntil.delete(s);
      this.#onLost(s);
    }
  }

  /**
   * Marks "lost" the running fleet_invocations of sessions whose lease, held
   * by the host that ran them, expired (a host that died and whose sessions
   * nobody took over). Any host may run it. Returns how many rows it marked.
   */
  async reapExpiredHosts(): Promise<number> {
    const result = await this.#fleet.pool.query(
      `WITH clock AS (SELECT ${NOW} AS now)
       UPDATE fleet_invocations f SET outcome = $1, finished_at = clock.now
         FROM session_leases l, clock
        WHERE f.outcome = $2 AND l.session_id = f.session_id AND (l.host ` +
        `= f.host OR l.host LIKE f.host || '/%') AND l.expires_at < clock.now`,
      [LOST, RUNNING],
    );
    return result.rowCount ?? 0;
  }

  /**
   * An operator's word that `host` is dead (`tether session release --host`):
   * its leases expire now, so its sessions open elsewhere at once, and its
   * calls of them still running are marked lost. Returns the sessions released.
   */
  async expireHost(host: string): Promise<string[]> {
    const { rows } = await this.#fleet.pool.query<{ session_id: string }>(
      `UPDATE session_leases SET expires_at = ${NOW} - 1 WHERE (host = $1 OR ` +
        `host LIKE $1 || '/%') AND expires_at >= ${NOW} - 1 RETURNING session_id`,
      [host],
    );
    await this.reapExpiredHosts();
    return rows.map((r) => r.session_id).sort();
  }

  /** Who holds the session's lease now, as a message names it (null: nobody). */
  async shownHolder(sessionId: string): Promise<string | null> {
    const { rows } = await this.#fleet.pool.query<{ host: string }>(
      "SELECT host FROM session_leases WHERE session_id = $1",
      [sessionId],
    );
    return rows[0] === undefined ? null : shownHolder(rows[0].host);
  }

  /** Stops the heartbeat and releases every lease this host holds. */
  async close(): Promise<void> {
    this.#stopHeartbeat();
    const sessions = [...this.#held];
    this.#held.clear();
    this.#confirmedUntil.clear();
    if (sessions.length > 0)
      await this.#fleet.pool.query("DELETE FROM session_leases WHERE host = $1 AND session_id = ANY($2::text[])", [
        this.#host,
        sessions,
      ]);
  }

  #startHeartbeat(): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(
      () => {
        this.heartbeat().then(
          () => {
            if (!this.#failing) return;
            this.#failing = false;
            this.#log("session leases: heartbeat renewing again", { host: this.#host, store: this.#fleet.shown });
          },
          (err: unknown) => {
            if (this.#failing) return;
            this.#failing = true;
            this.#log("session leases: heartbeat failed; leases expire unless it recovers in time", {
              host: this.#host,
              store: this.#fleet.shown,
              error: err instanceof Error ? err.message : String(err),
            });
          },
        );
      },
      Math.max(1, Math.floor(this.#ttlMs / 3)),
    );
    this.#timer.unref();
  }

  #stopHeartbeat(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}
