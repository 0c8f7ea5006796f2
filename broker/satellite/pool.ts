/**
 * The satellites of one (session, extension): up to `size` slots, each one
 * process holding up to its slot's capacity of invocations open at once, each
 * with its own token, so a capability is still judged only inside an open
 * invocation. The pool grows on demand (a call finds no room on a satellite
 * and the pool is below its size), and shrinks by the slots' own idle reaping:
 * calls go to the first satellite with room that is already running, so the
 * extra ones fall idle and are stopped first.
 *
 * Order: calls wait in one queue, first come first served; calls that name the
 * same non-empty strand never run at once (each starts after the one before it
 * ended), calls on different strands may.
 */
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";
import { BrokerCode, WireCode } from "../base/errors.js";
import type { InvocationRequest, InvokeOptions } from "../base/invocation.js";
import { failure, type InvocationOutcome } from "../base/outcome.js";
import type { SatelliteProcess } from "./process.js";
import type { SatelliteSlot } from "./slot.js";
import type { SatelliteState } from "./spec.js";

interface Waiter {
  readonly strand: string;
  /** Hands the waiter a slot, or a failure (cancelled, closed). */
  grant(slot: SatelliteSlot | InvocationOutcome): void;
}

export class SatellitePool {
  readonly name: string;
  /** The most satellites this pool runs at once. */
  readonly size: number;
  readonly #make: () => SatelliteSlot;
  readonly #slots: SatelliteSlot[] = [];
  /** Calls each slot is serving now (a slot takes up to its capacity). */
  readonly #busy = new Map<SatelliteSlot, number>();
  /** Calls running now, across the slots. */
  #running = 0;
  /** Strands with a call running now. */
  readonly #strands = new Set<string>();
  readonly #waiting: Waiter[] = [];
  #closed = false;
  #drained: Array<() => void> = [];

  /** The most calls open at once across the satellites (the manifest's `concurrency`). */
  readonly limit: number;

  /** `limit`: calls open at once across the pool (default: each of `size` slots full). */
  constructor(name: string, size: number, make: () => SatelliteSlot, limit?: number) {
    this.name = name;
    this.size = Math.max(1, size);
    this.#make = make;
    this.#slots.push(make());
    this.limit = Math.max(1, limit ?? this.size * this.#slots[0]!.capacity);
  }

  /** The satellites made so far (at most `size`); the first is made with the pool. */
  get slots(): readonly SatelliteSlot[] {
    return this.#slots;
  }

  /** The first satellite's state ("busy" while any call runs): what status shows. */
  get state(): SatelliteState {
    return this.#running > 0 ? "busy" : this.#slots[0]!.state;
  }

  /** The first satellite's process (the one a pool of size 1 has). */
  get process(): SatelliteProcess | null {
    return this.#slots[0]!.process;
  }

  /** Processes booted across the pool. */
  get boots(): number {
    return this.#slots.reduce((n, slot) => n + slot.boots, 0);
  }

  /** Calls running now. */
  get running(): number {
    return this.#running;
  }

  /** Calls waiting for a satellite. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Queues one invocation and resolves with its outcome; never rejects. */
  async invoke<K extends AnyKind>(
    req: InvocationRequest<K>,
    options: InvokeOptions = {},
  ): Promise<InvocationOutcome<K>> {
    if (this.#closed) return failure(BrokerCode.closed, `The satellite of '${this.name}' is closed`);
    if (options.signal?.aborted) return failure(WireCode.cancelled, "Cancelled before it started");
    const strand = req.strand;
    const taken = this.#take(strand) ?? (await this.#wait(strand, options.signal));
    if (!("invoke" in taken)) return taken as InvocationOutcome<K>;
    try {
      return await taken.invoke(req, options);
    } finally {
      this.#release(taken, strand);
    }
  }

  /** A slot with room for a call on `strand`, its count taken, or null when the call must wait. */
  #take(strand: string): SatelliteSlot | null {
    if (strand !== "" && this.#strands.has(strand)) return null;
    if (this.#running >= this.limit) return null;
    let slot: SatelliteSlot | undefined;
    for (const s of this.#slots) {
      if ((this.#busy.get(s) ?? 0) >= s.capacity) continue;
      if (s.state === "ready" || s.state === "busy") {
        slot = s;
        break;
      }
      slot ??= s;
    }
    if (slot === undefined && this.#slots.length < this.size) this.#slots.push((slot = this.#make()));
    if (slot === undefined) return null;
    this.#busy.set(slot, (this.#busy.get(slot) ?? 0) + 1);
    this.#running++;
    if (strand !== "") this.#strands.add(strand);
    return slot;
  }

  /** Whether every satellite the pool may have is full. */
  #full(): boolean {
    if (this.#running >= this.limit) return true;
    if (this.#slots.length < this.size) return false;
    return this.#slots.every((s) => (this.#busy.get(s) ?? 0) >= s.capacity);
  }

  #wait(strand: string, signal: AbortSignal | undefined): Promise<SatelliteSlot | InvocationOutcome> {
    return new Promise((resolve) => {
      const onAbort = () => {
        const at = this.#waiting.indexOf(waiter);
        if (at >= 0) this.#waiting.splice(at, 1);
        resolve(failure(WireCode.cancelled, "Cancelled while waiting its turn"));
      };
      const waiter: Waiter = {
        strand,
        grant: (slot) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(slot);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  #release(slot: SatelliteSlot, strand: string): void {
    const left = (this.#busy.get(slot) ?? 1) - 1;
    if (left > 0) this.#busy.set(slot, left);
    else this.#busy.delete(slot);
    this.#running--;
    if (strand !== "") this.#strands.delete(strand);
    // First come first served, except that a waiter whose strand is running lets the next one by.
    for (let i = 0; i < this.#waiting.length; ) {
      const waiter = this.#waiting[i]!;
      const next = this.#take(waiter.strand);
      if (next === null) {
        if (this.#full()) break;
        i++;
        continue;
      }
      this.#waiting.splice(i, 1);
      waiter.grant(next);
    }
    if (this.#running === 0 && this.#waiting.length === 0) for (const done of this.#drained.splice(0)) done();
  }

  /** Boots the first satellite now (activation does, to learn of a failed boot up front). */
  boot(): Promise<void> {
    return this.#slots[0]!.boot();
  }

  /** Takes no new calls, lets queued and open ones finish, then shuts every satellite down. Safe twice. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#running > 0 || this.#waiting.length > 0) await new Promise<void>((r) => this.#drained.push(r));
    await Promise.all(this.#slots.map((slot) => slot.close()));
  }

  /** Aborts now: queued calls fail `closed`, open ones fail, every process is killed. Safe twice. */
  async destroy(reason = "was destroyed", code: BrokerCode = BrokerCode.closed): Promise<void> {
    this.#closed = true;
    for (const waiter of this.#waiting.splice(0))
      waiter.grant(failure(BrokerCode.closed, `The satellite of '${this.name}' ${reason}`));
    await Promise.all(this.#slots.map((slot) => slot.destroy(reason, code)));
    for (const done of this.#drained.splice(0)) done();
  }
}
