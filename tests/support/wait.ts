/**
 * Waiting on events, not time: `until` polls a condition and fails only when
 * the event never comes (the guard is generous on purpose: it bounds a broken
 * run, it is not a claim about speed); `frozenClock` holds `Date.now` still so
 * code that measures time (rate buckets) behaves the same on a loaded machine.
 */

/** Resolves once `test()` holds; rejects naming `what` if it does not within `guardMs`. */
export async function until(what: string, test: () => boolean, guardMs = 30_000): Promise<void> {
  // Counted in 10 ms steps, not read off a clock: it keeps working while `frozenClock` holds Date.now.
  for (let waited = 0; !test(); waited += 10) {
    if (waited > guardMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Stops `Date.now` (the clock the broker's rate buckets and refusal windows read)
 * at its current value until the returned function restores it. Timers are not
 * touched: a `setTimeout` still fires when it would.
 */
export function frozenClock(): () => void {
  const real = Date.now;
  const at = real();
  Date.now = () => at;
  return () => {
    Date.now = real;
  };
}
