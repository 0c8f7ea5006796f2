/**
 * The capability contract: what a satellite's `cap` frame becomes on its way
 * to the broker's capabilities (broker/caps/), and what comes back. The
 * satellite layer produces calls and sends replies; caps/ serves them.
 */
import type { Cap, WireError } from "../../jail-runtime/wire/frames.js";
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";

/** One capability call, its JSON arguments parsed. */
export interface CapCall {
  readonly cap: string;
  readonly args: unknown;
}

/** A capability's answer: a value, or a refusal or failure the satellite reads as an error. */
export type CapReply =
  | { readonly ok: true; readonly value?: unknown }
  | { readonly ok: false; readonly error: WireError };

/** What a capability handler is told about the invocation a `cap` came from. */
export interface InvocationInfo {
  readonly extension: string;
  readonly kind: AnyKind;
  readonly name: string;
  readonly strand: string;
  /** Partials go to the caller of this invocation. */
  readonly report: (text: string) => void;
}

/** Serves every capability other than `report.emit` (which the slot serves itself). */
export type CapDispatcher = (call: CapCall, invocation: InvocationInfo) => Promise<CapReply>;

/** Judges and serves one capability call (the wire frame) made under a valid token. */
export type CapHandler = (cap: Cap) => Promise<CapReply>;

/** Told about capability calls refused before any handler saw them (for the audit). */
export type CapRefusalObserver = (cap: Cap, reason: WireError) => void;
