/**
 * Who waits on whom. An invocation's capability call may make the broker ask
 * another extension (a provider for `model.complete`, search providers, the
 * session's hooks about a reported act or a capability call), whose own
 * capability calls may ask a third, and so on. Asking an extension that is
 * itself waiting further up that chain would wait on its own answer: with a
 * satellite that holds one invocation at a time it is a deadlock until the
 * deadline kills a satellite (a provider's, in the daemon scope, serves every
 * session). So every invocation knows its chain — the satellites waiting on
 * it, itself last — every request the broker makes for one of its capability
 * calls carries that chain (`ScopeCallOptions.chain`), and the kernel refuses
 * to invoke an extension already on it: `busy`, naming the chain.
 *
 * The chain is passed by hand, not through an async context: AsyncLocalStorage
 * on Node 20 turns on promise hooks for the whole process (every `await` of
 * every call about three times dearer, measured here).
 */

/** The satellites an invocation's capability calls wait under, outermost first: `scope\0extension` each. */
export type WaitChain = readonly string[];

/** The key of one extension's satellites in one scope. */
export const waitKey = (scope: string, extension: string): string => `${scope}\u0000${extension}`;

/** Whether `extension`'s satellites in `scope` wait on the call that carries `chain`. */
export const waits = (chain: WaitChain | undefined, scope: string, extension: string): boolean =>
  chain?.includes(waitKey(scope, extension)) === true;

/** `scope/extension → …`, for a refusal's message. */
export const describeChain = (chain: WaitChain): string => chain.map((key) => key.replace("\u0000", "/")).join(" → ");
