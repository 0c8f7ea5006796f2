/**
 * The port between the `act.before`/`act.after` capabilities
 * (broker/caps/act.ts) and the session whose hooks are asked about a reported
 * act (broker/sessions/reported-acts.ts): the capabilities cannot import the
 * sessions, so a session puts its acts on its scope and the capability
 * environment finds them by the invocation's session id.
 */
import type { WaitChain } from "./waits.js";

/** The invocation that reported an act. */
export interface ActReporter {
  readonly sessionId: string;
  readonly extension: string;
  /** Its ledger row. */
  readonly invocationId: number | null;
  readonly kind: string;
  readonly name: string;
  /** The satellites waiting on the act, the reporter's last: their hooks are not asked. */
  readonly chain: WaitChain;
}

/** One act reported before it runs. */
export interface ActBeforeAsk extends ActReporter {
  readonly callId: string;
  readonly act: string;
  readonly arguments: unknown;
}

/**
 * How the hooks answered before the act: blocked; or the arguments it reported do not fit its
 * `[[act]] parameters` (`unfit`: why, no hook was asked); or the arguments to run it with.
 */
export type ActBeforeAnswer =
  | { readonly verdict: "blocked"; readonly reason: string; readonly by: string }
  | { readonly verdict: "unfit"; readonly problem: string }
  | { readonly verdict: "proceed"; readonly arguments: unknown; readonly rewrittenBy: string | null };

/** One act reported after it ran. */
export interface ActAfterAsk extends ActReporter {
  readonly callId: string;
  readonly act: string;
  /** The arguments it ran with. */
  readonly arguments: unknown;
  readonly ok: boolean;
  readonly result: unknown;
  readonly startedMs: number;
  readonly finishedMs: number;
}

/** A session's hooks as the act capabilities ask them; never rejects for a hook's fault (each is a note). */
export interface SessionActs {
  before(ask: ActBeforeAsk): Promise<ActBeforeAnswer>;
  /** `withheld`: a `tool_result` hook blocked the output. */
  after(ask: ActAfterAsk): Promise<{ readonly withheld: { readonly reason: string; readonly by: string } | null }>;
}

/**
 * Why no hook can be asked where hooks would guard the act: the daemon scope (a provider, a service, an
 * initializer: no session's hooks are its), or a session that let go of its scope (closing).
 */
export interface ActsUnguarded {
  readonly unguarded: string;
}

/**
 * Where the capability environment finds a session's acts; `unguarded`: acts are refused there; null:
 * no session ever held that scope (the hookless library path), so nobody is there to ask.
 */
export type ActPort = (sessionId: string) => SessionActs | ActsUnguarded | null;
