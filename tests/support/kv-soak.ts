/**
 * Test support: a shared counter incremented by concurrent workers through a
 * `KvStorage` (the home's SQLite, the fleet's PostgreSQL), by get-then-put or
 * by get-then-cas with a retry. With `lockstep`, every worker reads before any
 * worker writes in each round (a barrier between the read and the write), so
 * get-then-put loses updates in every run, not only when the timing happens
 * to interleave them: the lost-update race is made certain, and cas must
 * survive it.
 */
import type { KvSpace, KvValue } from "../../broker/store/kv-repository.js";
import type { KvStorage } from "../../broker/store/kv-storage.js";

/** The counter as the `cas` capability stores it: a JSON string of the decimal count. */
export const countValue = (n: number): KvValue => ({
  value: Buffer.from(JSON.stringify(String(n)), "utf8"),
  encoding: "json",
});

export function countOf(stored: KvValue | null): number {
  return stored === null ? 0 : Number(JSON.parse(stored.value.toString("utf8")));
}

/** `parties` workers meet here each round; the last to arrive lets every one go on. */
class Barrier {
  #waiting: Array<() => void> = [];
  constructor(readonly parties: number) {}

  wait(): Promise<void> {
    return new Promise((go) => {
      this.#waiting.push(go);
      if (this.#waiting.length === this.parties) for (const release of this.#waiting.splice(0)) release();
    });
  }
}

export interface Soak {
  /** One storage per worker, round robin: several connections (or hosts) to the same store. */
  readonly kvs: readonly KvStorage[];
  /** One space per worker, round robin (the same key in each: workers sharing a space race). */
  readonly spaces: readonly KvSpace[];
  readonly key: string;
  readonly workers: number;
  /** Increments each worker makes: the count should end at `workers × rounds` per space. */
  readonly rounds: number;
  readonly how: "put" | "cas";
  readonly lockstep: boolean;
}

export interface SoakResult {
  /** The count in each space at the end. */
  readonly counts: number[];
  /** Cas attempts that found another worker's write and tried again. */
  readonly retries: number;
}

export async function soak(s: Soak): Promise<SoakResult> {
  const barriers = new Map<KvSpace, Barrier>();
  for (const space of s.spaces)
    barriers.set(
      space,
      new Barrier(
        Array.from({ length: s.workers }, (_, w) => s.spaces[w % s.spaces.length]).filter((x) => x === space).length,
      ),
    );
  let retries = 0;
  const quota = 1 << 20;
  const worker = async (w: number): Promise<void> => {
    const kv = s.kvs[w % s.kvs.length]!;
    const space = s.spaces[w % s.spaces.length]!;
    for (let round = 0; round < s.rounds; round++) {
      let seen = await kv.get(space, s.key);
      if (s.lockstep) await barriers.get(space)!.wait();
      if (s.how === "put") {
        const put = await kv.put(space, s.key, countValue(countOf(seen) + 1), quota);
        if (!put.written) throw new Error("the soak's put was refused");
        continue;
      }
      for (;;) {
        const done = await kv.cas(space, s.key, seen, countValue(countOf(seen) + 1), quota);
        if (done.result === "swapped") break;
        if (done.result === "quota") throw new Error("the soak's cas was refused");
        seen = done.current;
        retries++;
      }
    }
  };
  await Promise.all(Array.from({ length: s.workers }, (_, w) => worker(w)));
  const counts: number[] = [];
  for (const space of s.spaces) counts.push(countOf(await s.kvs[0]!.get(space, s.key)));
  return { counts, retries };
}
