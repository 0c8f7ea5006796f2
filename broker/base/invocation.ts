/**
 * Asking a satellite for one invocation: the request, typed by its kind (the
 * outcome's type follows it, see outcome.ts), and the caller's options.
 */
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";
import type { CapDispatcher } from "./capability.js";

export interface InvocationRequest<K extends AnyKind = AnyKind> {
  readonly kind: K;
  readonly name: string;
  /** JSON text, forwarded as is. */
  readonly args: string;
  readonly strand: string;
  readonly deadlineMs: number;
}

export interface InvokeOptions {
  /** Aborting cancels the call: the satellite's `ctx.signal` aborts and the call ends `cancelled`. */
  readonly signal?: AbortSignal;
  /** Called with each partial report, in order. */
  readonly onReport?: (text: string) => void;
  /** Serves this invocation's capability calls (overrides the slot's dispatcher). */
  readonly dispatch?: CapDispatcher;
  /**
   * A time limit counted from the ask, the wait for a turn included: past it, a
   * queued call leaves the queue and an open one is cancelled, and either ends
   * `timeout` with `message`. One timer on the slot's job, not an AbortSignal.
   */
  readonly late?: { readonly afterMs: number; readonly message: string };
}
