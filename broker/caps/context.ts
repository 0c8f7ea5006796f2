/**
 * What every capability stage is handed: the broker's environment, the
 * invocation's context (read at dispatch), and one call's scope.
 */
import type { Resolver } from "../egress/judge.js";
import type { Logger } from "../log.js";
import type { Grants } from "../registry/grants.js";
import type { CapReply } from "../satellite/process.js";
import type { CapCall, InvocationInfo } from "../satellite/slot.js";
import type { Ledger } from "../store/ledger.js";
import type { Store } from "../store/open.js";
import type { OperatorPolicySource, SessionPolicy } from "./policy.js";

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
  readonly args: unknown;
}

/** The hook stage: a block refuses the call with the hook's reason. */
export type CapHookStage = (event: CapCallEvent) => Promise<{ block: string; by: string } | null>;

export const noHooks: CapHookStage = async () => null;

export interface CapEnvironment {
  readonly store: Store;
  readonly ledger: Ledger;
  readonly log: Logger;
  readonly operator: OperatorPolicySource;
  readonly resolve: Resolver;
  readonly hooks: CapHookStage;
}

/** Everything about the invocation a call comes from, read at dispatch. */
export interface CapContext {
  readonly sessionId: string;
  readonly invocationId: number | null;
  readonly deadlineAt: number;
  /** The approval's grants now (a revocation or narrowing shows on the next call). */
  readonly grants: () => Grants;
  readonly session: () => SessionPolicy;
}

/** One capability call as the stages see it. */
export interface CallScope {
  readonly env: CapEnvironment;
  readonly ctx: CapContext;
  readonly info: InvocationInfo;
  readonly call: CapCall;
  /** Writes the audit row of a decision. */
  audit(decision: "allowed" | "denied", rule: string, target?: string, bytes?: number): void;
  /** Refuses: audits a denied row and answers with the rule named. */
  refuse(code: string, rule: string, msg: string, target?: string): CapReply;
}
