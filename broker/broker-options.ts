/** What a broker is told, and what a call through it names. */
import type { LogLevel, Logger } from "./base/log.js";
import type { CapHookStage } from "./caps/context.js";
import type { Resolver } from "./egress/judge.js";
import type { JailOptions } from "./jail/setup.js";
import type { SandboxMode } from "./jail/sandbox.js";
import type { ExtraKind } from "./kernel/kinds.js";
import type { ScopeCallOptions } from "./kernel/session-scope.js";
import type { SecretSource } from "./secrets/store.js";
import type { KvStorage } from "./store/kv-storage.js";

/**
 * What a broker is told. Nothing is read from the environment: each option
 * absent takes the default an embedder expects (the `tether` command fills
 * them from its `TETHER_*` variables, broker/cli/environment.ts).
 */
export interface BrokerOptions extends JailOptions {
  /** The home folder; default `~/.tether`. */
  readonly home?: string;
  /** The OS sandbox: bwrap (the default; refused when bwrap is missing) or, insecurely, none. */
  readonly sandbox?: SandboxMode;
  /** Who approvals are recorded as approved by; default this OS user's name. */
  readonly operator?: string;
  readonly log?: Logger;
  /** The level of the logger made when `log` is absent; default warn. */
  readonly logLevel?: LogLevel;
  /**
   * Also write what is logged about each extension (its satellites' stderr and
   * stdout, its `log` lines, the broker's lines about it) to
   * `<home>/logs/<name>.log`, at every level, bounded (broker/base/extension-logs.ts).
   * Default true.
   */
  readonly extensionLogs?: boolean;
  readonly bootTimeoutMs?: number;
  readonly graceMs?: number;
  readonly ladderStepMs?: number;
  /** Resolves names for egress (tests inject one so a name can "resolve" anywhere). */
  readonly resolve?: Resolver;
  /** The `cap_call` hook stage (the hook bus plugs in here). */
  readonly capHooks?: CapHookStage;
  /**
   * Where the secrets injected into requests are read (default
   * `<home>/secrets/`, broker/secrets/store.ts): the seam for a keyring.
   */
  readonly secrets?: SecretSource;
  /**
   * Where bundles are kept to be reused, found by everything the bundling jail saw (an
   * absolute folder; broker/install/bundle-cache.ts); false keeps none. Default
   * `~/.cache/tether/bundles`.
   */
  readonly bundleCache?: string | false;
  /** Reuse Deno's caches per approved artifact (default true; see broker/jail/deno-cache.ts). */
  readonly denoCache?: boolean;
  /**
   * Invocation kinds added beside the built-ins (broker/kernel/kinds.ts, `ExtraKind`): their
   * manifest sections are read, reviewed and granted, their satellites' hellos and answers checked.
   */
  readonly kinds?: readonly ExtraKind<any, any>[];
}

/**
 * The fleet a broker is a host of (broker/fleet.ts sets it when it joins):
 * a session is leased by the host that opens it, and its state travels with it.
 */
export interface SessionFleet {
  /**
   * Before a session opens here: takes its lease (`session_in_use`
   * naming the host that holds it) and pulls its state.
   */
  openSession(id: string): Promise<void>;
  /** After it closed here (or failed to open): ships its state and lets its lease go. */
  closeSession(id: string): Promise<void>;
  /** The extensions' `kv` and `skv` keys, shared by the fleet's hosts (the quota holds across them). */
  readonly kv: KvStorage;
  /**
   * Sends the fleet what was changed in this host's registry (an approval,
   * a revocation, an uninstall); false when nothing had changed.
   */
  publish(): Promise<boolean>;
  /**
   * Before every invocation of `session` here: throws a named code when
   * this host may not serve it now (stale, or the lease is not its own).
   */
  admit(session: string): void;
  /** What an operator must be told now, one line each (the console shows them on every page). */
  alerts(): string[];
}

/** A call made through the broker itself: the session it belongs to is named, always. */
export interface CallOptions extends ScopeCallOptions {
  readonly session: string;
}

/** A hook's time limit when its `[[hook]]` row sets none. */
export { DEFAULT_HOOK_DEADLINE_MS } from "./kernel/kinds.js";

/** Fetches in flight at once: one extension's (all its invocations), and the whole broker's. */
export const EXTENSION_FETCHES = 16;
export const BROKER_FETCHES = 64;
