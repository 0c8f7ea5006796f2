/**
 * Lines from a stream another process writes (a database jail's answers),
 * each at most a bound: nothing it writes can grow the broker's memory past
 * it, and a line cut off by the process dying is never handed on.
 */
import type { Readable } from "node:stream";

/**
 * Calls `line` with each complete line of `stream`; a line longer than `max` calls
 * `tooLong` and stops reading. What is left unterminated at the end (a process killed
 * mid-write) is dropped, never parsed.
 */
export function readLines(stream: Readable, max: number, line: (text: string) => void, tooLong: () => void): void {
  let held: Buffer[] = [];
  let size = 0;
  stream.on("data", (chunk: Buffer) => {
    let from = 0;
    for (let nl = chunk.indexOf(10, from); nl !== -1; nl = chunk.indexOf(10, from)) {
      held.push(chunk.subarray(from, nl));
      const text = Buffer.concat(held).toString("utf8");
      held = [];
      size = 0;
      from = nl + 1;
      line(text);
    }
    if (from < chunk.length) {
      held.push(chunk.subarray(from));
      size += chunk.length - from;
      if (size > max) {
        held = [];
        size = 0;
        stream.removeAllListeners("data");
        stream.resume();
        tooLong();
      }
    }
  });
}
