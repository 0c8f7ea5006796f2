/**
 * What a satellite process is told when it boots (its spec), the states it
 * passes through, and the handle on one running invocation.
 */
import type { AnyKind } from "../../jail-runtime/wire/kinds.js";
import type { CapHandler } from "../base/capability.js";
import type { WireCode } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import type { InvocationOutcome } from "../base/outcome.js";
import type { DenoCacheMount, DenoCacheSource } from "../jail/deno-cache.js";
import type { SandboxMode } from "../jail/sandbox.js";
import type { JailSetup } from "../jail/setup.js";
import type { IdleCpuBudget } from "./cpu-watch.js";
import type { AddedKinds } from "./answer.js";
import type { Declared } from "./handshake.js";

export type SatelliteState = "booting" | "ready" | "busy" | "draining" | "dead";

export interface SatelliteSpec {
  /** For logs and messages, e.g. "echo". */
  readonly name: string;
  /** The bundled artifact, one JS file. */
  readonly artifact: string;
  /** What the approved manifest declares; the hello must match exactly. */
  readonly declared: Declared;
  /** The kinds added beside the built-ins it may be asked: their answers are checked against their schemas. */
  readonly kinds?: AddedKinds;
  readonly sandbox: SandboxMode;
  /**
   * How the jail is set up on this host: Deno's path, the jail uid and root, cgroups, where the
   * launcher is built (default: every default).
   */
  readonly jail?: JailSetup;
  readonly memoryMb: number;
  readonly bootTimeoutMs: number;
  /** Added to an invocation's deadline before the broker gives up on it. */
  readonly graceMs: number;
  /** Bounded waits between the steps of the shutdown ladder. */
  readonly ladderStepMs: number;
  readonly maxFrameBytes?: number;
  readonly log: Logger;
  /** Where Deno's caches for this artifact come from (bwrap only); none: a fresh, private cache per boot. */
  readonly denoCache?: DenoCacheSource | DenoCacheMount;
  /** CPU it may spend with no invocation open (default DEFAULT_IDLE_CPU). */
  readonly idleCpu?: IdleCpuBudget;
  /**
   * What must be on disk before a frame leaves for it: the ledger's journaled
   * starts (store/start-journal.ts). A throw before a turn's first frame holds
   * it to the turn's end; a throw there fails the connection, and the frames
   * still held are not sent.
   */
  readonly beforeSend?: () => void;
  /** Told when the broker stops it for passing a bound, for the audit. */
  readonly onBoundStop?: (bound: "cpu" | "memory", detail: string) => void;
}

export interface RunningInvocation<K extends AnyKind = AnyKind> {
  readonly id: number;
  /** The caller's answer; may settle before the satellite is free (on cancel). */
  readonly outcome: Promise<InvocationOutcome<K>>;
  /** Settles when the satellite is done with this invocation (result, death or kill). */
  readonly settled: Promise<void>;
  /** Best effort: asks the satellite to stop; the caller gets `code` (`cancelled` unless told) now. */
  cancel(reason?: string, code?: WireCode): void;
}

/**
 * An invocation a satellite has open (one of several when its slot allows): what its answer and
 * the capability calls carrying its token are checked against.
 */
export interface OpenInvocation {
  readonly id: number;
  readonly token: string;
  readonly kind: AnyKind;
  readonly name: string;
  readonly onCap: CapHandler;
  answered: boolean;
  readonly settled: Promise<void>;
  resolveOutcome(outcome: InvocationOutcome): void;
  resolveSettled(): void;
  timer: NodeJS.Timeout;
  /** Its capability calls being served, and the characters of their arguments (see MAX_CAPS_IN_FLIGHT). */
  capsInFlight: number;
  capArgsInFlight: number;
}
