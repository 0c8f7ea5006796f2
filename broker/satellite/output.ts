/**
 * A satellite's stdout and stderr: drained always (a child blocked on a full
 * pipe would hang), logged line by line up to a byte budget, never trusted.
 */
import type { Readable } from "node:stream";
import type { Logger } from "../base/log.js";

/** Bytes of output logged per stream per satellite before the rest is dropped. */
export const DEFAULT_OUTPUT_BUDGET = 64 * 1024;
const MAX_LINE = 2048;

export interface OutputTail {
  /** The last lines kept, for error messages to the operator. */
  readonly tail: () => string;
  /** Bytes received and dropped past the budget. */
  readonly dropped: () => number;
}

export function captureOutput(
  stream: Readable | null | undefined,
  name: "stdout" | "stderr",
  log: Logger,
  budget = DEFAULT_OUTPUT_BUDGET,
): OutputTail {
  let logged = 0;
  let dropped = 0;
  let partial = "";
  const tail: string[] = [];
  const emit = (line: string) => {
    const clipped = line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line;
    tail.push(clipped);
    if (tail.length > 20) tail.shift();
    log.info(`satellite ${name}`, { line: clipped });
  };
  stream?.on("data", (chunk: Buffer) => {
    if (logged >= budget) {
      dropped += chunk.length;
      return;
    }
    const room = budget - logged;
    const take = chunk.length > room ? chunk.subarray(0, room) : chunk;
    dropped += chunk.length - take.length;
    logged += take.length;
    const lines = (partial + take.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    if (partial.length > MAX_LINE) {
      emit(partial);
      partial = "";
    }
    for (const line of lines) emit(line);
    if (logged >= budget) log.warn(`satellite ${name} passed its ${budget}-byte log budget; the rest is dropped`);
  });
  stream?.on("end", () => {
    if (partial) emit(partial);
    if (dropped > 0) log.warn(`satellite ${name}: ${dropped} bytes dropped past the log budget`);
  });
  stream?.on("error", () => {});
  return { tail: () => tail.join("\n"), dropped: () => dropped };
}
