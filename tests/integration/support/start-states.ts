/** The states a call's start can be in when its broker dies (support/crashing-ledger.ts). */
export const START_STATES = [
  /** Begun; nothing written but its journal line. */
  "journaled",
  /** Begun and finished before the batch: the finish is in the window that may be lost. */
  "finished-unwritten",
  /** Begun, its row committed running. */
  "running",
  /** Its row committed running, its finish not yet written. */
  "running-finish-unwritten",
  /** Begun, finished, both committed. */
  "done",
] as const;
export type StartState = (typeof START_STATES)[number];
