/**
 * The satellite's msgpack output buffer: grows as it is written, encodes
 * strings in place, and is reused across frames by the channel. Written on
 * the built-ins captured in `intrinsics.ts` (see msgpack.ts for why).
 */
import {
  AB,
  DV,
  U8,
  dvSetFloat64,
  dvSetInt16,
  dvSetInt32,
  dvSetInt8,
  dvSetUint16,
  dvSetUint32,
  stringCharCodeAt,
  u8Length,
  u8Set,
  u8Subarray,
  utf8EncodeInto,
} from "./intrinsics.js";

/** Big-endian writers of one number, on the captured DataView methods. */
type Setter = (view: DataView, at: number, n: number) => void;
const setU16: Setter = (view, at, n) => dvSetUint16(view, at, n, false);
const setU32: Setter = (view, at, n) => dvSetUint32(view, at, n, false);
const setI8: Setter = (view, at, n) => dvSetInt8(view, at, n);
const setI16: Setter = (view, at, n) => dvSetInt16(view, at, n, false);
const setI32: Setter = (view, at, n) => dvSetInt32(view, at, n, false);
const setF64: Setter = (view, at, n) => dvSetFloat64(view, at, n, false);

/** A growable byte buffer; `reserve` bytes at its start are left for the caller (the frame header). */
export class Writer {
  #bytes: Uint8Array;
  #view: DataView;
  #at: number;

  constructor(reserve = 0, capacity = 4096) {
    const buffer = new AB(capacity);
    this.#bytes = new U8(buffer);
    this.#view = new DV(buffer);
    this.#at = reserve;
  }

  get length(): number {
    return this.#at;
  }

  /** The bytes it can hold before it grows. */
  get capacity(): number {
    return u8Length(this.#bytes);
  }

  /** Empties it for the next document, keeping its buffer; `reserve` bytes are left at the start. */
  reset(reserve = 0): void {
    this.#at = reserve;
  }

  get view(): DataView {
    return this.#view;
  }

  /** The bytes written so far (a view, not a copy). */
  bytes(): Uint8Array {
    return u8Subarray(this.#bytes, 0, this.#at);
  }

  /** Makes room for `n` more bytes and returns where they go. */
  room(n: number): number {
    const at = this.#at;
    const need = at + n;
    if (need > u8Length(this.#bytes)) {
      let capacity = u8Length(this.#bytes) * 2;
      while (capacity < need) capacity *= 2;
      const buffer = new AB(capacity);
      const bytes = new U8(buffer);
      u8Set(bytes, u8Subarray(this.#bytes, 0, at), 0);
      this.#bytes = bytes;
      this.#view = new DV(buffer);
    }
    this.#at = need;
    return at;
  }

  /** Writes `n` with `set` into `size` new bytes; `room` may move the bytes, so the view is read after it. */
  #put(size: number, set: Setter, n: number): void {
    const at = this.room(size);
    set(this.#view, at, n);
  }

  byte(n: number): void {
    const at = this.room(1);
    this.#bytes[at] = n; // an index store: no prototype method an extension could patch
  }

  /**
   * Appends `text` as a msgpack str, encoded in place (no intermediate bytes):
   * short ASCII (the keys, the codes) byte by byte as a fixstr, the rest with
   * encodeInto behind a header sized for the reserved room (a wider length
   * field than the text needs is still valid msgpack).
   */
  str(text: string): void {
    const n = text.length;
    const start = this.#at;
    if (n < 32) {
      const at = this.room(1 + n);
      const bytes = this.#bytes;
      let i = 0;
      for (; i < n; i++) {
        const c = stringCharCodeAt(text, i);
        if (c >= 0x80) break;
        bytes[at + 1 + i] = c;
      }
      if (i === n) {
        bytes[at] = 0xa0 | n;
        return;
      }
      this.#at = start;
    }
    // ASCII first (n bytes); if it did not all fit, again with room for the worst case (3 bytes a unit).
    if (!this.#strWithin(text, n)) this.#strWithin(text, n * 3);
  }

  /** Writes `text` as a str in at most `max` bytes; rolls back and answers false when it does not fit. */
  #strWithin(text: string, max: number): boolean {
    const start = this.#at;
    const width = max < 0x100 ? 2 : max < 0x10000 ? 3 : 5;
    const at = this.room(width + max);
    const { read, written } = utf8EncodeInto(text, u8Subarray(this.#bytes, at + width, at + width + max));
    if (read < text.length) {
      this.#at = start;
      return false;
    }
    this.#at = at + width + written;
    if (width === 2) {
      this.#bytes[at] = 0xd9;
      this.#bytes[at + 1] = written;
    } else if (width === 3) {
      this.#bytes[at] = 0xda;
      dvSetUint16(this.#view, at + 1, written, false);
    } else {
      this.#bytes[at] = 0xdb;
      dvSetUint32(this.#view, at + 1, written, false);
    }
    return true;
  }
  u16(n: number): void {
    this.#put(2, setU16, n);
  }
  u32(n: number): void {
    this.#put(4, setU32, n);
  }
  i8(n: number): void {
    this.#put(1, setI8, n);
  }
  i16(n: number): void {
    this.#put(2, setI16, n);
  }
  i32(n: number): void {
    this.#put(4, setI32, n);
  }
  f64(n: number): void {
    this.#put(8, setF64, n);
  }

  raw(bytes: Uint8Array): void {
    const at = this.room(u8Length(bytes));
    u8Set(this.#bytes, bytes, at);
  }
}
