/**
 * Newline-delimited lines from chunks of bytes, each at most a bound while it
 * is read: bytes past the bound are never held, the rest of that line is
 * skipped up to its newline, and the lines after it read as before.
 */
export class BoundedLines {
  #held: Buffer[] = [];
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
      const bytes = this.#held.length === 0 ? part : Buffer.concat([...this.#held, part]);
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
    this.#held.push(Buffer.from(rest));
    this.#size += rest.length;
  }

  /** Drops what is held of an unfinished line. */
  #clear(): void {
    this.#held = [];
    this.#size = 0;
  }

  clear(): void {
    this.#clear();
    this.#skipping = false;
  }
}
