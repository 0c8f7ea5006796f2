/**
 * The invocations open on this satellite (several at once when the manifest's
 * `[limits] concurrency` allows), and the capability calls made under their
 * tokens. Every `cap` frame carries the token of the invocation whose code
 * made the call, followed across awaits and timers (`InvocationContext`);
 * code that runs outside every invocation carries none, and the broker refuses
 * it, as it refuses a token whose invocation has ended.
 */
import type { CapResult } from "../wire/frames.js";
import {
  InvocationContext,
  SafeAbortController,
  SafeError,
  SafeMap,
  abort,
  abortSignal,
  clearTimer,
  dateNow,
  setTimer,
  SafePromise,
  jsonStringify,
  mapClear,
  mapDelete,
  mapForEach,
  mapGet,
  mapSet,
  mapSize,
} from "./intrinsics.js";

/**
 * A capability call the broker refused; `code` is the wire code, e.g. `denied`.
 *
 * @example
 * ```ts
 * import { CapError, callCap } from "@tether/cap";
 * try {
 *   await callCap("kv.get", { key: "k" });
 * } catch (err) {
 *   if (err instanceof CapError && err.code === "denied") console.error(err.message);
 * }
 * ```
 */
export class CapError extends Error {
  override readonly name = "CapError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface Pending {
  resolve(value: unknown): void;
  reject(err: Error): void;
}

/**
 * An invocation's abort signal, made only when the extension first reads
 * `ctx.signal` (most never do: the broker bounds every call itself, and
 * kills a satellite that overruns). Until then a cancel or the deadline is
 * only remembered, so a call costs no controller and no timer; a signal read
 * later is already aborted, or aborts when the rest of the deadline passes.
 */
export class CallSignal {
  readonly #deadlineAt: number | null;
  #controller: AbortController | null = null;
  #reason: Error | null = null;
  #timer: unknown = null;

  /** `deadlineMs`: aborts that long after now with "Deadline passed" (none: only `abort` aborts it). */
  constructor(deadlineMs?: number) {
    this.#deadlineAt = deadlineMs === undefined ? null : dateNow() + deadlineMs;
  }

  get signal(): AbortSignal {
    if (this.#controller === null) {
      const controller = new SafeAbortController();
      this.#controller = controller;
      if (this.#reason !== null) abort(controller, this.#reason);
      else if (this.#deadlineAt !== null) {
        const left = this.#deadlineAt - dateNow();
        if (left <= 0) this.abort(new SafeError("Deadline passed"));
        else this.#timer = setTimer(() => this.abort(new SafeError("Deadline passed")), left);
      }
    }
    return abortSignal(this.#controller);
  }

  abort(reason: Error): void {
    if (this.#reason !== null) return;
    this.#reason = reason;
    if (this.#controller !== null) abort(this.#controller, reason);
  }

  /** The invocation answered: its deadline no longer runs. */
  end(): void {
    if (this.#timer !== null) clearTimer(this.#timer);
    this.#timer = null;
  }
}

interface Open {
  readonly id: number;
  readonly token: string;
  readonly controller: CallSignal;
}

/**
 * Where `cap` frames go: the satellite's channel to the broker (`channel.ts`),
 * or, in an author's tests, the test kit's stand-in broker (`ext/testing/`).
 */
export interface CapSink {
  send(frame: object): Promise<void>;
}

let channel: CapSink | null = null;
const opens = new SafeMap<number, Open>();
const running = new InvocationContext<Open>();
let nextCapId = 1;
const pending = new SafeMap<number, Pending>();

export function attach(c: CapSink): void {
  channel = c;
}

/** Opens invocation `id` under `token`; `deadlineMs`: when its signal aborts (see CallSignal). */
export function begin(id: number, token: string, deadlineMs?: number): CallSignal {
  const controller = new CallSignal(deadlineMs);
  mapSet(opens, id, { id, token, controller });
  return controller;
}

/** Runs `fn` as code of open invocation `id`: the capability calls it makes, now or later, carry its token. */
export function within<R>(id: number, fn: () => R): R {
  const open = mapGet(opens, id);
  return open === undefined ? fn() : running.run(open, fn);
}

export function end(id: number): void {
  const open = mapGet(opens, id);
  if (open === undefined) return;
  open.controller.end();
  mapDelete(opens, id);
}

/** Open invocation `id`, if it is still open. */
export function opened(id: number): Open | null {
  return mapGet(opens, id) ?? null;
}

/** How many invocations are open. */
export function openCount(): number {
  return mapSize(opens);
}

/** Settles the pending capability call that `frame` answers; unknown ids are ignored. */
export function settle(frame: CapResult): void {
  const waiter = mapGet(pending, frame.id);
  if (waiter === undefined) return;
  mapDelete(pending, frame.id);
  if (frame.ok) waiter.resolve(frame.value);
  else waiter.reject(new CapError(frame.error?.code ?? "denied", frame.error?.msg ?? "Refused"));
}

/** Fails every pending capability call: the channel is gone. */
export function failAll(reason: string): void {
  mapForEach(pending, (waiter) => waiter.reject(new CapError("crashed", reason)));
  mapClear(pending);
}

/**
 * Sends a capability call under the open invocation's token and waits for the
 * broker's answer. Rejects with {@linkcode CapError} when refused.
 *
 * @example
 * ```ts
 * import { callCap } from "@tether/cap";
 * const value = await callCap("kv.get", { key: "last-city" });
 * ```
 */
export function callCap(cap: string, args: unknown): Promise<unknown> {
  if (channel === null)
    return rejected(new CapError("denied", "No broker channel: capabilities are reachable only inside a satellite"));
  const id = nextCapId++;
  const token = running.get()?.token ?? "";
  let text: string;
  try {
    // The captured JSON.stringify: an extension's own patch cannot rewrite what the broker is asked.
    text = jsonStringify(args ?? null) ?? "null";
  } catch (err) {
    return rejected(
      new CapError("bad_arguments", `Capability '${cap}' arguments are not JSON: ${(err as Error).message}`),
    );
  }
  const via = channel;
  return new SafePromise((resolve, reject) => {
    mapSet(pending, id, { resolve, reject });
    void sendCap(via, { t: "cap", id, token, cap, args: text }, (err) => {
      mapDelete(pending, id);
      reject(new CapError("crashed", err.message));
    });
  });
}

// Awaits rather than `.catch`: nothing here calls a patched Promise.prototype.then.
async function sendCap(via: CapSink, frame: object, failed: (err: Error) => void): Promise<void> {
  try {
    await via.send(frame);
  } catch (err) {
    failed(err as Error);
  }
}

function rejected(err: Error): Promise<never> {
  return new SafePromise<never>((_, reject) => reject(err));
}

async function quietly(promise: Promise<unknown>): Promise<void> {
  try {
    await promise;
  } catch {
    // dropped on purpose
  }
}

/** Sends a capability call and does not wait; the broker's answer is dropped. */
export function castCap(cap: string, args: unknown): void {
  void quietly(callCap(cap, args));
}
