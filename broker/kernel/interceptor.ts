/**
 * Interceptors around the kernel's `invoke`, composed as undici composes
 * dispatchers: each is handed the next and returns its own. A feature that
 * must have a say before an invocation (the initializers' gate, a fleet's
 * admission) registers one; the first registered is the outermost.
 */
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";
import type { CallResult, ScopeCallOptions, SessionScope } from "./session-scope.js";

/**
 * One invocation as it passes the interceptors. `kind` is `"boot"` when a
 * session activates an extension (its satellite starts, nothing is asked):
 * a refusal then fails the activation.
 */
export interface Call {
  readonly scope: SessionScope;
  readonly extension: string;
  readonly kind: AnyKind | "boot";
  readonly name: string;
  readonly payload: string;
  readonly options: ScopeCallOptions;
}

export type Invoke = (call: Call) => Promise<CallResult>;
export type Interceptor = (next: Invoke) => Invoke;

/** `base` behind every interceptor of `chain`, the first outermost. */
export function composed(chain: readonly Interceptor[], base: Invoke): Invoke {
  return chain.reduceRight<Invoke>((next, interceptor) => interceptor(next), base);
}
