/**
 * Bytes from outside held until they make a whole (a frame, a line, a body): one buffer, grown by
 * doubling up to a bound. Kept as the chunks they arrived in, a peer that sends a byte at a time
 * makes every byte cost an object (~100–200 bytes of heap for a one-byte Buffer), so a bound on
 * the bytes would not bound the memory. Here memory stays within twice the bytes held.
 */
const FIRST_CAPACITY = 1024;
/** A whole this size or smaller, announced (a frame's header), gets its buffer at once. */
const EXACT_UP_TO = 1024 * 1024;
const EMPTY = new Uint8Array(0);

export class HeldBytes {
  readonly #max: number;
  #buffer: Uint8Array = EMPTY;
  #size = 0;

  /** `max`: the most bytes ever held; `append` refuses past it. */
  constructor(max: number) {
    this.#max = max;
  }

  get size(): number {
    return this.#size;
  }

  /**
   * Appends `chunk` (copied); false, with nothing appended, when the bytes held would pass the bound.
   * `whole`: how many bytes the whole will have, when known (a small one is then allocated once).
   */
  append(chunk: Uint8Array, whole?: number): boolean {
    const size = this.#size + chunk.length;
    if (size > this.#max) return false;
    if (size > this.#buffer.length) {
      const wanted =
        whole !== undefined && whole <= EXACT_UP_TO && whole >= size
          ? whole
          : Math.max(size, 2 * this.#buffer.length, FIRST_CAPACITY);
      const grown = new Uint8Array(Math.min(this.#max, wanted));
      grown.set(this.#buffer.subarray(0, this.#size));
      this.#buffer = grown;
    }
    this.#buffer.set(chunk, this.#size);
    this.#size = size;
    return true;
  }

  /** The bytes held, as a view. */
  view(): Uint8Array {
    return this.#buffer.subarray(0, this.#size);
  }

  /**
   * Lets go of the buffer: a view handed out stays as it was, since nothing is ever written into a
   * buffer again once it was let go.
   */
  release(): void {
    this.#buffer = EMPTY;
    this.#size = 0;
  }
}
