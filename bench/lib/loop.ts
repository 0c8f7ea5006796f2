/** Driving calls: one at a time (latency samples) and as a closed loop (calls/s). */

export type Call = () => Promise<unknown>;

/** Runs `n` calls one after another; each one's latency in ns. */
export async function sequential(call: Call, n: number): Promise<bigint[]> {
  const out: bigint[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    out[i] = process.hrtime.bigint() - t0;
  }
  return out;
}

/**
 * Closed loop: `lanes[i]` gets `depth` callers each, every caller starting its
 * next call as soon as its last one answers. Completions are counted over
 * `windowMs`, after a warm-up of a fifth of that. Returns calls/s.
 */
export async function closedLoop(lanes: readonly Call[], depth: number, windowMs: number): Promise<number> {
  const warmEnd = process.hrtime.bigint() + BigInt(Math.round(windowMs * 0.2 * 1e6));
  const end = warmEnd + BigInt(Math.round(windowMs * 1e6));
  let done = 0;
  let startAt = 0n;
  let stopAt = 0n;
  const caller = async (call: Call) => {
    for (;;) {
      await call();
      const now = process.hrtime.bigint();
      if (now < warmEnd) continue;
      if (startAt === 0n) startAt = now;
      if (now >= end) {
        if (stopAt === 0n) stopAt = now;
        return;
      }
      done++;
    }
  };
  await Promise.all(lanes.flatMap((call) => Array.from({ length: depth }, () => caller(call))));
  return done / (Number(stopAt - startAt) / 1e9);
}
