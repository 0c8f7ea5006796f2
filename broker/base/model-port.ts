/**
 * The port between the `model.complete` capability (broker/caps/model-complete.ts)
 * and what answers it: the completion bridge (broker/providers/model-call.ts)
 * and, for an invocation of a session, that session's run state
 * (broker/sessions/model-runs.ts). The capabilities import neither: the
 * broker puts the port in the capability environment.
 */
import type { WaitChain } from "./waits.js";
import type { CompletionRequest, Usage } from "../../jail-runtime/wire/provider-kinds.js";

/** One completion an extension asks from inside one of its invocations. */
export interface ModelAsk {
  /** The invocation's scope: a session's id, or the daemon scope's. */
  readonly sessionId: string;
  /** The extension asking: its own providers are never chosen (its satellite is busy with this call). */
  readonly extension: string;
  readonly request: CompletionRequest;
  /** The approval's `[model] providers`; null: any served provider. */
  readonly allow: readonly string[] | null;
  /** The satellites waiting on the call, the asker's last: a provider among them is not chosen. */
  readonly chain: WaitChain;
}

/** The provider a call goes to, chosen before it is judged further (the `cap_call` hooks see it). */
export type ModelChoice =
  | { readonly ok: true; readonly provider: string; readonly extension: string; readonly model: string }
  | { readonly ok: false; readonly code: string; readonly rule: string; readonly msg: string };

/** What came of one completion (a failure's message never holds a stack or a secret). */
export type ModelOutcome =
  | {
      readonly ok: true;
      readonly text: string;
      readonly usage: Usage;
      readonly stopReason: string | null;
      readonly model: string;
      readonly provider: string;
      /** The provider's ledger row (kind `complete`, in the daemon scope). */
      readonly invocationId: number | null;
      /** US dollars, from the catalog's prices; absent when the model has none. */
      readonly costUsd?: number;
    }
  | { readonly ok: false; readonly code: string; readonly msg: string };

/**
 * A session's side of model calls: exclusive work. `admit` answers a lease
 * (its signal aborts when the session closes) or why not; `used` tells the
 * session one call's usage (its `usage` event).
 */
export interface SessionModels {
  admit(extension: string): { readonly ok: true; readonly signal: AbortSignal; release(): void } | ModelBusy;
  /** `chain`: the asking invocation's (the `usage` hooks it fires leave those satellites out). */
  used(extension: string, outcome: Extract<ModelOutcome, { ok: true }>, chain: WaitChain): void;
}

export interface ModelBusy {
  readonly ok: false;
  readonly rule: string;
  readonly msg: string;
}

export interface ModelPort {
  choose(ask: ModelAsk): ModelChoice;
  /** The session holding `sessionId`'s scope, or null (the daemon scope, a scope no session holds). */
  session(sessionId: string): SessionModels | null;
  complete(
    ask: ModelAsk,
    provider: string,
    options: { readonly signal: AbortSignal; readonly onDelta: (text: string) => void },
  ): Promise<ModelOutcome>;
}
