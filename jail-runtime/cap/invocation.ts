/**
 * The one invocation open on this satellite, and the capability calls made
 * under its token. Every `cap` frame carries the token of the invocation that
 * is open *now*; between invocations it carries none and the broker refuses it.
 */
import type { CapResult } from "../wire/frames.js";
import {
  SafeAbortController,
  SafeMap,
  SafePromise,
  jsonStringify,
  mapClear,
  mapDelete,
  mapForEach,
  mapGet,
  mapSet,
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

interface Open {
  readonly id: number;
  readonly token: string;
  readonly controller: AbortController;
}

/**
 * Where `cap` frames go: the satellite's channel to the broker (`channel.ts`),
 * or, in an author's tests, the test kit's stand-in broker (`ext/testing/`).
 */
export interface CapSink {
  send(frame: object): Promise<void>;
}

let channel: CapSink | null = null;
let open: Open | null = null;
let nextCapId = 1;
const pending = new SafeMap<number, Pending>();

export function attach(c: CapSink): void {
  channel = c;
}

export function begin(id: number, token: string): AbortController {
  const controller = new SafeAbortController();
  open = { id, token, controller };
  return controller;
}

export function end(id: number): void {
  if (open?.id === id) open = null;
}

export function current(): Open | null {
  return open;
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
  const token = open?.token ?? "";
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
