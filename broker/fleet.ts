/**
 * A broker that is one host of a fleet (docs/fleet.md): its registry —
 * installs and approvals — is the fleet's, kept in the shared PostgreSQL
 * store and copied into the host's own store, where every call reads it.
 *
 * Joining pulls the fleet's registry (writing the artifacts this host lacks,
 * each checked against its hash) and listens for changes; every change
 * another host publishes is pulled at once and applied to the running
 * satellites as a local approval or revocation is (a revoked extension's
 * satellites stop). A command run with the fleet's store publishes what it
 * changed in the copy (`publish`): a `tether approve` on any host is an
 * approval on every host.
 */
import { join } from "node:path";
import type { InitHost } from "./init/init-lines.js";
import type { KernelHost } from "./kernel/host.js";
import type { SessionFleet } from "./broker-options.js";
import { currentApproval } from "./kernel/approval-sync.js";
import { packageVersion } from "./base/version.js";
import { fleetHosts, recordHost, SEEN_EVERY_MS, type HostView } from "./store/pg/hosts.js";
import { openPgStore, type PgStore } from "./store/pg/open.js";
import { listenRegistry, type RegistryListener } from "./store/pg/registry-listener.js";
import {
  publishRegistry,
  pullRegistry,
  resignApprovals,
  type PullResult,
  type RegistrySnapshot,
} from "./store/pg/registry-mirror.js";
import { pullSession, sessionDigest, sessionRows, shipSession } from "./store/pg/session-state.js";
import { DEFAULT_LEASE_MS, holderOf, SessionLeases } from "./store/pg/session-leases.js";
import { LedgerShipper } from "./store/pg/ledger-shipper.js";
import { explainPgError } from "./store/pg/rights.js";
import { FleetKv } from "./store/pg/fleet-kv.js";
import { openStore, type Store } from "./store/open.js";
import { BrokerCode, TetherError } from "./base/errors.js";
import { OperatorKeyError, signingKey, trustedKeys, type TrustedKey } from "./fleet-trust/operator-keys.js";
import type { Refusal } from "./fleet-trust/judge-approvals.js";
import { LeaseLostError } from "./store/pg/session-state.js";
import { OperatorPolicySource } from "./caps/policy.js";

/**
 * What a fleet's host is to the fleet: the kernel, its
 * initializers, and the slot its sessions and storage go through.
 */
export interface FleetHost extends KernelHost, InitHost {
  /** Makes `fleet` the broker's (sessions lease from it, kv and skv go to it); returns its release. */
  useFleet(fleet: SessionFleet): () => void;
}

export interface FleetOptions {
  /** The shared store: postgres://role:password@host:5432/database. */
  readonly url: string;
  /** This host's name in the fleet (unique per broker host). */
  readonly host: string;
  /** How often the registry's version is polled besides the pushed notifications (default 500 ms). */
  readonly pollMs?: number;
  /**
   * Whether changes are pushed (LISTEN; default true), else found by polling
   * alone (behind a pooler in transaction mode, which does not carry LISTEN).
   */
  readonly push?: boolean;
  /**
   * Whether to follow the fleet's changes as they happen (default true: a
   * serving broker). A command that changes the registry does not: a pull
   * in the middle of it would undo what it has not yet published.
   */
  readonly listen?: boolean;
  /**
   * How long a session's lease lasts without this host's heartbeat
   * (default 15000 ms): how soon a dead host's sessions open elsewhere.
   */
  readonly leaseMs?: number;
}

/** How often a serving host records itself as seen. */

/** How often the state of the sessions held here is shipped when it moved. */
const SHIP_EVERY_MS = 250;

export class FleetMember implements SessionFleet {
  readonly host: string;
  /** Extensions' `kv` and `skv`: the fleet's tables, one quota across hosts. */
  readonly kv: FleetKv;
  /** The store's URL without its password. */
  readonly shown: string;
  readonly #broker: FleetHost;
  /** Undoes what joining did to the broker: its fleet slot and its admission interceptor. */
  #detach: Array<() => void> = [];
  readonly #store: PgStore;
  #snapshot: RegistrySnapshot | null = null;
  #pulling: Promise<PullResult> | null = null;
  #again = false;
  #listener: RegistryListener | null = null;
  readonly #reported = new Set<string>();
  #pulls = 0;
  #seen: NodeJS.Timeout | null = null;
  /** The sessions open here, each with the digest of its state as last shipped. */
  readonly #held = new Map<string, string>();
  #shipping: NodeJS.Timeout | null = null;
  readonly #leases: SessionLeases;
  readonly #ledger: LedgerShipper;
  readonly #ledgerStore: Store;
  #reaping: NodeJS.Timeout | null = null;
  /** When this host last heard the fleet's store (a pull or a poll answered), on this process's monotonic clock. */
  #lastHeard = performance.now();
  /** Whether calls are refused for staleness now (each change is logged: every outage, its end). */
  #stale = false;
  #staleness: NodeJS.Timeout | null = null;
  /** Sessions whose lease another host took: closed here for good, with who holds them. */
  readonly #lost = new Map<string, string>();
  /** Approval rows refused at the last pull (no trusted operator's signature). */
  #refused: readonly Refusal[] = [];
  readonly #refusedSeen = new Set<string>();
  /** Revocations made here that the fleet has not got yet (published again at every pull until it has). */
  #unpublished = 0;
  readonly #policy: OperatorPolicySource;

  private constructor(broker: FleetHost, store: PgStore, options: FleetOptions) {
    this.#broker = broker;
    this.#store = store;
    this.host = options.host;
    this.shown = store.shown;
    // A session this host leased is written only while its lease is this host's (fenced in the database).
    this.kv = new FleetKv(store, (id) => (this.#held.has(id) || this.#lost.has(id) ? this.#leases.holder : null));
    this.#policy = new OperatorPolicySource(broker.home);
    const log = (message: string, fields: Record<string, unknown>) =>
      broker.log.warn(message, { ...fields, fleet: store.shown, host: options.host });
    this.#leases = new SessionLeases(store, holderOf(options.host), {
      ...(options.leaseMs !== undefined ? { ttlMs: options.leaseMs } : {}),
      log,
      // Its heartbeat came too late and another host took the session: it stops here.
      onLost: (id) => {
        this.#held.delete(id);
        this.#lost.set(id, "another host");
        broker.log.warn(
          "this host's lease of the session expired and another host took " +
            "it; the session is closed here for good and its satellites stop",
          { session: id, host: options.host },
        );
        void broker.scope(id).stopAll({ abort: true });
        void this.#leases.shownHolder(id).then(
          (holder) => void (holder !== null && this.#lost.has(id) && this.#lost.set(id, `host ${holder}`)),
          () => {},
        );
      },
    });
    // The host's ledger, audit and hook traces, copied to the
    // fleet in batches (one numbering per home: the host's name).
    // On a connection of its own: it still ships the last rows after the broker closed its store.
    this.#ledgerStore = openStore(join(broker.home, "tether.db"));
    this.#ledger = new LedgerShipper(this.#ledgerStore, store, options.host, { log });
  }

  /** Connects `broker` to the fleet's store: records the host, pulls the registry, listens for changes. */
  static async join(broker: FleetHost, options: FleetOptions): Promise<FleetMember> {
    // A transaction left open by this host frozen past its lease ends with the lease (open.ts).
    const store = await openPgStore(options.url, { idleInTransactionMs: options.leaseMs ?? DEFAULT_LEASE_MS });
    const member = new FleetMember(broker, store, options);
    try {
      await recordHost(store, options.host, packageVersion());
      await member.pull();
    } catch (err) {
      member.#ledgerStore.close();
      await store.close();
      throw err;
    }
    // Every invocation here is admitted first: not past the staleness bound, not a session another host holds.
    member.#detach = [
      broker.useFleet(member),
      broker.intercept((next) => (call) => {
        member.admit(call.scope.id);
        return next(call);
      }),
    ];
    member.#ledger.start();
    if (options.listen === false) return member;
    // Seen by the fleet while it serves: `tether status` and `tether doctor --store` list it with its clock.
    member.#seen = setInterval(
      () => void recordHost(store, options.host, packageVersion()).catch(() => {}),
      SEEN_EVERY_MS,
    );
    member.#seen.unref();
    // Any serving host marks lost the running calls of sessions whose host died and which nobody reopened.
    member.#reaping = setInterval(
      () => void member.#leases.reapExpiredHosts().catch(() => {}),
      options.leaseMs ?? DEFAULT_LEASE_MS,
    );
    member.#reaping.unref();
    member.#listener = listenRegistry(
      options.url,
      store,
      () =>
        void member
          .pull()
          .catch((err) => member.#report(`pulling the fleet's registry failed: ${explainPgError(err)}`)),
      {
        version: () => member.#snapshot?.version ?? -1,
        ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
        ...(options.push !== undefined ? { push: options.push } : {}),
        onError: (message) => member.#report(message),
        // Heard only when the copy is current: a store that answers while every pull fails is not heard.
        onHeard: (version) => void (version === member.#snapshot?.version && member.#heard()),
      },
    );
    // Every outage past the bound is logged as it begins and as it ends, however often it recurs.
    member.#staleness = setInterval(() => member.#checkStaleness(), 250);
    member.#staleness.unref();
    return member;
  }

  /** The fleet's hosts and the sessions each serves now (`tether status`). */
  hosts(): Promise<HostView[]> {
    return fleetHosts(this.#store);
  }

  /** Pulls done so far (tests wait on it). */
  get pulls(): number {
    return this.#pulls;
  }

  /** Whether pushed notifications are arriving (else the poll finds changes). */
  get listening(): boolean {
    return this.#listener?.listening ?? false;
  }

  /**
   * Makes this host's copy equal to the fleet's registry, and applies it to the
   * running satellites. Calls made meanwhile share one pull and one after it.
   */
  pull(): Promise<PullResult> {
    if (this.#pulling !== null) {
      this.#again = true;
      return this.#pulling;
    }
    const run = async (): Promise<PullResult> => {
      let result: PullResult;
      do {
        if (this.#broker.closed) throw new Error("the broker is closed");
        this.#again = false;
        result = await pullRegistry(
          this.#store,
          this.#broker.store,
          join(this.#broker.home, "artifacts"),
          this.#trusted(),
        );
        this.#heard();
        this.#snapshot = result.snapshot;
        this.#pulls++;
        for (const problem of result.problems) this.#report(problem);
        this.#noteRefusals(result.refused);
        this.#unpublished = result.unpublished;
        if (result.unpublished > 0 && this.#listener !== null) void this.#republish();
        if (result.changed) {
          this.#migrate();
          // The store's data_version does not move for this connection's writes: the registry is told,
          // and its change applies to the live satellites now.
          this.#broker.registry.noteApplied();
          if (this.#listener !== null) void this.#initialize();
        }
      } while (this.#again && !this.#broker.closed);
      return result;
    };
    this.#pulling = run().finally(() => (this.#pulling = null));
    return this.#pulling;
  }

  /**
   * Sends the fleet what a command changed in this host's copy since the last
   * pull — approvals and revocations signed with this home's operator key —
   * then pulls. Rejects when the store cannot be reached: a revocation stays
   * in force here and is published again by a serving host until it lands.
   */
  async publish(): Promise<boolean> {
    if (this.#snapshot === null) await this.pull();
    const published = await publishRegistry(
      this.#store,
      this.#broker.store,
      this.#snapshot!,
      signingKey(this.#broker.home),
    );
    if (published) await this.pull();
    return published;
  }

  /** Ends a dead host's leases now (`tether session release --host`); the sessions released. */
  releaseHost(host: string): Promise<string[]> {
    return this.#leases.expireHost(host);
  }

  /**
   * A key rotation: the fleet's approvals in force that a key this
   * host trusts signed are signed again with this home's key.
   */
  async resign(): Promise<number> {
    const signer = signingKey(this.#broker.home);
    if (signer === null) throw new OperatorKeyError("This home has no operator key to sign with: tether key create");
    const count = await resignApprovals(this.#store, this.#trusted(), signer);
    await this.pull();
    return count;
  }

  /** Revocations made here that the fleet lacks, published again (each failure is reported, the next pull retries). */
  async #republish(): Promise<void> {
    try {
      if (await this.publish())
        this.#broker.log.info(
          "a revocation made on this host while the fleet could not be reached is now the fleet's",
          { fleet: this.shown, host: this.host },
        );
    } catch (err) {
      this.#broker.log.warn(
        `a revocation made on this host has not reached the fleet yet ` +
          `(retried): ${err instanceof OperatorKeyError ? err.message : explainPgError(err)}`,
        { fleet: this.shown, host: this.host },
      );
    }
  }

  /** The keys approvals must be signed by; a broken trusted-keys file trusts none (and says so). */
  #trusted(): TrustedKey[] {
    try {
      return trustedKeys(this.#broker.home);
    } catch (err) {
      this.#report(`${(err as Error).message}: no approval is accepted until it is fixed`);
      return [];
    }
  }

  /** Each refused row is logged and audited once per process, with what to do. */
  #noteRefusals(refused: readonly Refusal[]): void {
    this.#refused = refused;
    for (const r of refused) {
      if (this.#refusedSeen.has(r.key)) continue;
      this.#refusedSeen.add(r.key);
      this.#broker.ledger.audit({
        invocationId: null,
        sessionId: "@fleet",
        extension: r.extension,
        capability: "fleet.approval",
        target: `#${r.id}`,
        decision: "denied",
        rule: `fleet_trust: ${r.why}`.slice(0, 256),
        bytes: 0,
      });
      this.#broker.log.error(
        `refused the fleet's approval #${r.id} of '${r.extension}': ${r.why}; ` +
          `it is not served on this host (docs/fleet.md#the-trust-model)`,
        {
          fleet: this.shown,
          host: this.host,
          extension: r.extension,
        },
      );
    }
  }

  /**
   * The fleet's approval rows this host refused at its last
   * pull, and why (tether status, tether doctor, the console).
   */
  get refused(): readonly Refusal[] {
    return this.#refused;
  }

  /** Refused approvals, staleness, revocations not yet published: one line each. */
  alerts(): string[] {
    const lines: string[] = [];
    if (this.#listener !== null && this.silentMs > this.#bound())
      lines.push(
        `This host has not heard the fleet's store for ${Math.round(this.silentMs / 1000)} ` +
          `s (bound ${this.#bound() / 1000} s): it refuses every call until it hears again`,
      );
    for (const r of this.#refused)
      lines.push(`Refused the fleet's approval #${r.id} of '${r.extension}': ${r.why}; it is not served here`);
    if (this.#unpublished > 0)
      lines.push(`${this.#unpublished} revocation(s) made here have not reached the fleet yet; retried at every pull`);
    return lines;
  }

  /** Revocations made here that the fleet has not got yet. */
  get unpublished(): number {
    return this.#unpublished;
  }

  #heard(): void {
    this.#lastHeard = performance.now();
    if (this.#stale) this.#checkStaleness();
  }

  /** How long this host has not heard the fleet's store, in ms. */
  get silentMs(): number {
    return Math.max(0, performance.now() - this.#lastHeard);
  }

  /** This home's staleness bound (policy.toml [fleet] max_staleness_ms), ms. */
  get stalenessBoundMs(): number {
    return this.#bound();
  }

  #bound(): number {
    const policy = this.#policy.current();
    return policy instanceof Error ? 10_000 : policy.maxStalenessMs;
  }

  #checkStaleness(): void {
    const stale = this.silentMs > this.#bound();
    if (stale === this.#stale) return;
    this.#stale = stale;
    if (stale)
      this.#broker.log.error(
        `this host has not heard the fleet's store for ${Math.round(this.silentMs / 1000)} ` +
          `s (bound ${this.#bound() / 1000} s): refusing calls until it hears again`,
        { fleet: this.shown, host: this.host },
      );
    else
      this.#broker.log.warn("this host hears the fleet's store again: serving calls", {
        fleet: this.shown,
        host: this.host,
      });
  }

  /**
   * Whether an invocation of `session` may run on this host now; throws a
   * named code when not: the host is past its staleness bound (`fleet_stale`),
   * or the session's lease is another host's or not confirmed (`session_moved`).
   * A host that joined only to run a command (no listener) is not bounded.
   */
  admit(session: string): void {
    if (this.#listener === null) return;
    const silent = this.silentMs;
    const bound = this.#bound();
    if (silent > bound) {
      this.#checkStaleness();
      throw new TetherError(
        BrokerCode.fleetStale,
        `This host has not heard the fleet's store for ${(silent / 1000).toFixed(1)} ` +
          `s (bound ${bound / 1000} s, policy.toml [fleet] max_staleness_ms): a revocation ` +
          `may have been made meanwhile, so it serves nothing until it hears again`,
      );
    }
    const lost = this.#lost.get(session);
    if (lost !== undefined)
      throw new TetherError(
        BrokerCode.sessionMoved,
        `Session '${session}' is served by ${lost} now: this host's ` +
          `lease ran out and the session is closed here; open it there`,
      );
    if (this.#held.has(session) && !this.#leases.confirmed(session)) {
      throw new TetherError(
        BrokerCode.sessionMoved,
        `Session '${session}': this host cannot confirm its lease (its last ` +
          `renewal is older than the lease); nothing is served until a renewal answers`,
      );
    }
  }

  async openSession(id: string): Promise<void> {
    await this.#leases.acquire(id);
    this.#lost.delete(id);
    try {
      await pullSession(this.#store, this.#broker.store, id);
    } catch (err) {
      await this.#leases.release(id).catch(() => {});
      throw err;
    }
    this.#held.set(id, sessionDigest(sessionRows(this.#broker.store, id)));
    if (this.#shipping === null) {
      this.#shipping = setInterval(() => void this.#shipMoved(), SHIP_EVERY_MS);
      this.#shipping.unref();
    }
  }

  /** Never throws: a session closes here whatever the fleet's store does (what was not shipped is reported). */
  async closeSession(id: string): Promise<void> {
    if (!this.#held.has(id)) return;
    try {
      await this.#ship(id);
    } catch (err) {
      this.#report(`session ${id}: its last state did not reach the fleet's store: ${explainPgError(err)}`);
    }
    this.#held.delete(id);
    // Not released, the lease expires on its own.
    await this.#leases
      .release(id)
      .catch((err) =>
        this.#report(`session ${id}: its lease could not be released (it expires): ${explainPgError(err)}`),
      );
  }

  /** Ships each held session whose state moved since its last shipment. */
  async #shipMoved(): Promise<void> {
    for (const id of [...this.#held.keys()]) {
      await this.#ship(id).catch((err) =>
        this.#report(`shipping session state failed (retried): ${explainPgError(err)}`),
      );
    }
  }

  async #ship(id: string): Promise<void> {
    if (this.#broker.closed) return;
    const rows = sessionRows(this.#broker.store, id);
    const digest = sessionDigest(rows);
    if (this.#held.get(id) === digest) return;
    try {
      await shipSession(this.#store, id, rows, this.#leases.holder);
    } catch (err) {
      // Fenced by the database: another host holds the session; it is closed here.
      if (err instanceof LeaseLostError && this.#held.delete(id))
        this.#lost.set(id, (await this.#leases.shownHolder(id).catch(() => null)) ?? "another host");
      throw err;
    }
    if (this.#held.has(id)) this.#held.set(id, digest);
  }

  async close(): Promise<void> {
    for (const detach of this.#detach.splice(0)) detach();
    if (this.#shipping !== null) clearInterval(this.#shipping);
    for (const id of [...this.#held.keys()]) await this.closeSession(id);
    if (this.#seen !== null) clearInterval(this.#seen);
    if (this.#reaping !== null) clearInterval(this.#reaping);
    if (this.#staleness !== null) clearInterval(this.#staleness);
    await this.#leases.close().catch(() => {});
    await this.#ledger
      .close()
      .catch((err) =>
        this.#report(
          `the ledger's last rows did not reach the fleet's store (they ` +
            `are shipped when this home starts again): ${explainPgError(err)}`,
        ),
      );
    await this.#listener?.close();
    await this.#pulling?.catch(() => {});
    this.#ledgerStore.close();
    await this.#store.close();
  }

  /**
   * An approval made on another host applied its [storage] migrations to that
   * host's database of the extension; this host's database gets them here,
   * before the approval is applied to anything running here. One that fails
   * is reported, and the extension's calls here meet the database as it was.
   */
  #migrate(): void {
    const broker = this.#broker;
    for (const installed of broker.registry.list()) {
      const approval = currentApproval(broker.registry, installed);
      const storage = approval?.grants.storage ?? null;
      if (storage === null) continue;
      try {
        broker.registry.applyApprovedMigrations(installed, storage.max_bytes, (line) =>
          broker.log.info(line, { extension: installed.name }),
        );
      } catch (err) {
        this.#report(`${installed.name}: its migrations could not be applied on this host: ${(err as Error).message}`);
      }
    }
  }

  /** Initializers ([init]) of versions approved elsewhere, run here as `tether serve` runs them at start. */
  async #initialize(): Promise<void> {
    const { runPendingInits } = await import("./init/init-lines.js");
    await runPendingInits(this.#broker, (line) => this.#broker.log.info(line, { fleet: this.shown })).catch((err) =>
      this.#report(`initializers: ${(err as Error).message}`),
    );
  }

  /** Each distinct problem once, in the broker's log. */
  #report(message: string): void {
    if (this.#reported.has(message)) return;
    this.#reported.add(message);
    this.#broker.log.warn(message, { fleet: this.shown, host: this.host });
  }
}
