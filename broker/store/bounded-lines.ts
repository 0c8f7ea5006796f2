/**
 * Lines from a stream another process writes (a database jail's answers),
 * each at most a bound: nothing it writes can grow the broker's memory past
 * it, and a line cut off by the process dying is never handed on.
 */
import type { Readable } from "node:stream";
import { HeldBytes } from "../../jail-runtime/wire/held-bytes.js";
import { bufferOf } from "../base/buffer-of.js";

/**
 * Calls `line` with each complete line of `stream`; a line longer than `max` calls
 * `tooLong` and stops reading. What is left unterminated at the end (a process killed
 * mid-write) is dropped, never parsed. An unfinished line is held in one buffer
 * (`HeldBytes`): a process writing a byte at a time cannot make each byte cost an object.
 */
export function readLines(stream: Readable, max: number, line: (text: string) => void, tooLong: () => void): void {
  const held = new HeldBytes(max);
  const stop = () => {
    held.release();
    stream.removeAllListeners("data");
    stream.resume();
    tooLong();
  };
  stream.on("data", (chunk: Buffer) => {
    let from = 0;
    for (let nl = chunk.indexOf(10, from); nl !== -1; nl = chunk.indexOf(10, from)) {
      const part = chunk.subarray(from, nl);
      from = nl + 1;
      if (held.size === 0) {
        line(part.toString("utf8"));
        continue;
      }
      if (!held.append(part)) return stop();
      const text = bufferOf(held.view()).toString("utf8");
      held.release();
      line(text);
    }
    if (from < chunk.length && !held.append(chunk.subarray(from))) stop();
  });
}
