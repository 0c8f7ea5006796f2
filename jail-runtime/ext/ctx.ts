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
    ...overrides,
  };
}
