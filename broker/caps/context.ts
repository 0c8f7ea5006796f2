/**
 * What every capability stage is handed: the broker's environment, the
 * invocation's context (read at dispatch), and one call's scope.
 */
import type { EgressAgents } from "../egress/agents.js";
import type { DbProcesses } from "../store/db-processes.js";
import type { Resolver } from "../egress/judge.js";
import type { Logger } from "../base/log.js";
import type { LoginSecrets, SecretSource } from "../secrets/store.js";
import type { Grants } from "../registry/grants.js";
import type { CapReply } from "../base/capability.js";
import type { CapCall, InvocationInfo } from "../base/capability.js";
import type { Ledger } from "../store/ledger.js";
import type { Store } from "../store/open.js";
import type { ParsedRules } from "./parsed-rules.js";
import type { CapabilityWork } from "./in-flight.js";
import type { Permits } from "./permits.js";
import type { OperatorPolicySource, SessionPolicy } from "./policy.js";
import type { KvStorage } from "../store/kv-storage.js";
import type { SearchPort } from "../base/search-port.js";
import type { ActPort } from "../base/act-port.js";
import type { ModelPort } from "../base/model-port.js";
import type { WaitChain } from "../base/waits.js";

/** A judged `net.fetch` hop as the `cap_call` hooks see it: the broker's normal forms, never the raw spelling. */
export interface CapCallRequest {
  readonly method: string;
  readonly scheme: "http" | "https";
  /** The name in its normal form (lower case, A-labels, no trailing dot), or the canonical address of an IP literal. */
  readonly host: string;
  readonly port: number;
  readonly path: string;
  /** The approved rule that allows it. */
  readonly rule: string;
  /** Every address the host resolved to (or the literal), with its class; `ipv4` when an IPv6 address carries one. */
  readonly addresses: ReadonlyArray<{ readonly address: string; readonly class: string; readonly ipv4?: string }>;
}

/** What the `cap_call` hook stage is shown. */
export interface CapCallEvent {
  readonly sessionId: string;
  /** The ledger row of the invocation making the call. */
  readonly invocationId: number | null;
  readonly extension: string;
  readonly capability: string;
  readonly target: string;
  /** The invocation this call was made within, e.g. "tool:fetch_weather". */
  readonly within: string;
  /** For `net.fetch`: the judged hop. */
  readonly request?: CapCallRequest;
  /** The satellites waiting on the call, the caller's last: their hooks are not asked. */
  readonly chain: WaitChain;
}

/** The hook stage: a block refuses the call with the hook's reason. */
export type CapHookStage = (event: CapCallEvent) => Promise<{ block: string; by: string } | null>;

export const noHooks: CapHookStage = async () => null;

export interface CapEnvironment {
  /** The broker's home: an extension's database is `<home>/data/<name>.sqlite`. */
  readonly home: string;
  readonly store: Store;
  readonly ledger: Ledger;
  readonly log: Logger;
  readonly operator: OperatorPolicySource;
  readonly resolve: Resolver;
  readonly hooks: CapHookStage;
  /** Capability work in flight (close waits, destroy aborts, policy changes re-judge egress). */
  readonly work: CapabilityWork;
  /** The broker's pooled connections. */
  readonly agents: EgressAgents;
  /** The operator's secrets, read when a request that names one is sent (never cached). */
  readonly secrets: SecretSource;
  /** Secrets a `[[login]]` fills: its current access token (refreshed when due), or null. */
  readonly logins: LoginSecrets;
  /** The broker's parsed egress rules, by their text. */
  readonly rules: ParsedRules;
  /** Where `kv` and `skv` keys live now: the home's store, or the fleet's once this broker joined one. */
  kv(): KvStorage;
  /** Extensions' database processes (`db.query`, `db.exec`): their SQL never runs on the broker's thread. */
  readonly dbs: DbProcesses;
  /** The bounds on concurrent fetches beyond the invocation's own: the extension's, then the broker's. */
  fetchBounds(extension: string): readonly Permits[];
  /** The session's search providers (`search.query`), by the invocation's session; absent: none anywhere. */
  readonly search?: SearchPort;
  /** The session's hooks as reported acts ask them (`act.before`/`act.after`); absent: no session anywhere. */
  readonly acts?: ActPort;
  /** Model calls (`model.complete`): the completion bridge and the sessions' run state; absent: none. */
  readonly models?: ModelPort;
}

/** Everything about the invocation a call comes from, read at dispatch. */
export interface CapContext {
  readonly sessionId: string;
  readonly invocationId: number | null;
  readonly deadlineAt: number;
  /** The approval's grants now (a revocation or narrowing shows on the next call). */
  readonly grants: () => Grants;
  readonly session: () => SessionPolicy;
  /** Aborted when the invocation ends (answered, cancelled, timed out, its satellite stopped). */
  readonly signal: AbortSignal;
  /** The satellites this invocation's calls wait under, its own last (broker/base/waits.ts). */
  readonly chain: WaitChain;
  /** Told each `log` line the invocation writes (after the broker's log has it). */
  readonly onLog?: (level: "debug" | "info" | "warn" | "error", line: string) => void;
}

/** One capability call as the stages see it. */
export interface CallScope {
  readonly env: CapEnvironment;
  readonly ctx: CapContext;
  readonly info: InvocationInfo;
  readonly call: CapCall;
  /** The invocation's bound on concurrent fetches (`[limits] fetches`). */
  readonly fetches: Permits;
  /** Writes the audit row of a decision (`secret`: the name of a secret the request carried). */
  audit(decision: "allowed" | "denied", rule: string, target?: string, bytes?: number, secret?: string): void;
  /** Refuses: audits a denied row and answers with the rule named. */
  refuse(code: string, rule: string, msg: string, target?: string): CapReply;
}
