/**
 * Newline-delimited lines from chunks of bytes, each at most a bound while it
 * is read: bytes past the bound are never held, the rest of that line is
 * skipped up to its newline, and the lines after it read as before.
 */
const EMPTY = Buffer.alloc(0);
/** The most of a line's buffer kept for the next line. */
const KEPT_BYTES = 64 * 1024;

export class BoundedLines {
  /**
   * The unfinished line's bytes: the first `#size` of one buffer, grown by doubling up to the
   * bound (a buffer per chunk cost ~100 bytes of heap each: a line sent a byte at a time held
   * a hundred times its size).
   */
  #held: Buffer = EMPTY;
  #size = 0;
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
  ) {}

  push(chunk: Buffer): void {
    let from = 0;
    for (let nl = chunk.indexOf(10, from); nl !== -1; nl = chunk.indexOf(10, from)) {
      const part = chunk.subarray(from, nl);
      from = nl + 1;
      if (this.#skipping) {
        this.#skipping = false;
        continue;
      }
      if (this.#size + part.length > this.max) {
        this.#clear();
        this.tooLong();
        continue;
      }
      const bytes = this.#size === 0 ? part : Buffer.concat([this.#held.subarray(0, this.#size), part]);
      this.#clear();
      this.line(bytes);
    }
    if (from >= chunk.length || this.#skipping) return;
    const rest = chunk.subarray(from);
    if (this.#size + rest.length > this.max) {
      this.#clear();
      this.#skipping = true;
      this.tooLong();
      return;
    }
    // Copied: a stream may reuse its chunk's memory, and a slice would pin all of it.
    const size = this.#size + rest.length;
    if (size > this.#held.length) {
      const grown = Buffer.allocUnsafe(Math.min(this.max, Math.max(size, 2 * this.#held.length, 1024)));
      this.#held.copy(grown, 0, 0, this.#size);
      this.#held = grown;
    }
    rest.copy(this.#held, this.#size);
    this.#size = size;
  }

  /** Drops what is held of an unfinished line (a long line's buffer with it). */
  #clear(): void {
    if (this.#held.length > KEPT_BYTES) this.#held = EMPTY;
    this.#size = 0;
  }

  clear(): void {
    this.#clear();
    this.#skipping = false;
  }
}
