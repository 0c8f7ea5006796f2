import { act, actBefore } from "../cap/act.js";

/** What a tool or hook is handed beside its arguments. */
export interface Ctx {
  /** Attribution: which strand of the agent's work this call belongs to ("" when none). */
  readonly strand: string;
  /** The time budget the broker gave this invocation, in milliseconds. */
  readonly deadlineMs: number;
  /**
   * Emits a partial report to the caller. Best effort: a partial that cannot be
   * sent never fails the call it narrates. In tests it is whatever you pass.
   */
  readonly report: (text: string) => void;
  /** Aborts when the caller cancels or the deadline passes. */
  readonly signal: AbortSignal;
  /**
   * Reports an act of your own (an `[[act]]` of the manifest) to the session's hooks, runs it with the
   * arguments they leave, and tells them its output; rejects with `ActBlocked` when a hook blocked it
   * (it did not run) or withheld the output (jail-runtime/cap/act.ts).
   */
  readonly act: typeof act;
  /** The first half of `act`, for an act whose end you report later: a handle with `after` and `failed`. */
  readonly actBefore: typeof actBefore;
}

/**
 * A context for exercising a tool in your own tests, with no channel.
 *
 * @example
 * ```ts
 * import { testCtx } from "@tether/ext";
 * const seen: string[] = [];
 * const ctx = testCtx({ report: (t) => seen.push(t) });
 * ```
 */
export function testCtx(overrides: Partial<Ctx> = {}): Ctx {
  return {
    strand: "",
    deadlineMs: 30_000,
    report: () => {},
    signal: new AbortController().signal,
    act,
    actBefore,
    ...overrides,
  };
}
