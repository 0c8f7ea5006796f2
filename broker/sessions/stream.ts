/**
 * Partials as an async iterator: wraps a call that reports through a callback
 * (`onReport`) into `for await (const step of …)`, yielding each partial in
 * order and then the result. Breaking out of the loop cancels the call.
 */

export type Step<R> =
  | { readonly type: "partial"; readonly text: string }
  | { readonly type: "result"; readonly result: R };

/**
 * Runs `start(onReport, signal)` and yields its partials, then its result.
 * Partials are buffered (a slow reader never loses one); leaving the loop early
 * aborts `signal`, which the call turns into a cancellation.
 */
export async function* streamed<R>(
  start: (onReport: (text: string) => void, signal: AbortSignal) => Promise<R>,
  outer?: AbortSignal,
): AsyncGenerator<Step<R>, void, undefined> {
  const controller = new AbortController();
  const onOuterAbort = () => controller.abort(outer?.reason);
  if (outer?.aborted) controller.abort(outer.reason);
  else outer?.addEventListener("abort", onOuterAbort, { once: true });
  const queue: Step<R>[] = [];
  let wake: (() => void) | null = null;
  let failure: { error: unknown } | null = null;
  let done = false;
  const push = (step: Step<R>) => {
    queue.push(step);
    wake?.();
  };
  start((text) => push({ type: "partial", text }), controller.signal).then(
    (result) => {
      push({ type: "result", result });
      done = true;
      wake?.();
    },
    (error: unknown) => {
      failure = { error };
      done = true;
      wake?.();
    },
  );
  try {
    for (;;) {
      const step = queue.shift();
      if (step !== undefined) {
        yield step;
        if (step.type === "result") return;
        continue;
      }
      if (failure !== null) throw (failure as { error: unknown }).error;
      if (done) return;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
    }
  } finally {
    outer?.removeEventListener("abort", onOuterAbort);
    // Left early (break, return, throw in the loop body): cancel the call.
    if (!done) controller.abort(new Error("The caller stopped reading"));
  }
}
