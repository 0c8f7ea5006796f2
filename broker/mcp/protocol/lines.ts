/**
 * Newline-delimited lines from chunks of bytes, each at most a bound while it
 * is read: bytes past the bound are never held, the rest of that line is
 * skipped up to its newline, and the lines after it read as before. An
 * unfinished line is held in one buffer (`HeldBytes`), however it is split.
 */
import { HeldBytes } from "../../../jail-runtime/wire/held-bytes.js";
import { bufferOf } from "../../base/buffer-of.js";

export class BoundedLines {
  readonly #held: HeldBytes;
  /** Inside a line past the bound: dropping bytes until its newline. */
  #skipping = false;

  /**
   * @param max the most bytes a line may hold (without its newline)
   * @param line each complete line within the bound, as bytes
   * @param tooLong told once for each line past the bound, as soon as it passes it
   */
  constructor(
    readonly max: number,
    private readonly line: (bytes: Buffer) => void,
    private readonly tooLong: () => void,
  ) {
    this.#held = new HeldBytes(max);
  }

  push(chunk: Buffer): void {
    let from = 0;
    for (let nl = chunk.indexOf(10, from); nl !== -1; nl = chunk.indexOf(10, from)) {
      const part = chunk.subarray(from, nl);
      from = nl + 1;
      if (this.#skipping) {
        this.#skipping = false;
        continue;
      }
      if (this.#held.size === 0) {
        // The whole line in this chunk: handed out as it is.
        if (part.length > this.max) this.tooLong();
        else this.line(part);
        continue;
      }
      const fits = this.#held.append(part);
      const bytes = bufferOf(this.#held.view());
      this.#held.release();
      if (fits) this.line(bytes);
      else this.tooLong();
    }
    if (from >= chunk.length || this.#skipping) return;
    // Copied into the held buffer: a stream may reuse its chunk's memory, and a slice would pin all of it.
    if (!this.#held.append(chunk.subarray(from))) {
      this.#held.release();
      this.#skipping = true;
      this.tooLong();
    }
  }

  clear(): void {
    this.#held.release();
    this.#skipping = false;
  }
}
