/**
 * Frame codec: a 4-byte big-endian length, then one msgpack map — the
 * broker's side, with msgpackr; no runtime-specific imports. The satellite
 * frames with its own msgpack code (`cap/framing.ts`); both check what they
 * decode with `frame-check.ts`, which keeps msgpackr out of every artifact.
 */
import { Packr, Unpackr } from "msgpackr";
import type * as v from "valibot";
import { FRAME_BOUNDS, scanMsgpack, type DocumentBoundsError } from "./document-bounds.js";
import { DEFAULT_MAX_FRAME_BYTES, ProtocolError, checkFrame, type TagIndex } from "./frame-check.js";

export {
  DEFAULT_MAX_FRAME_BYTES,
  ProtocolError,
  checkFrame,
  tagIndex,
  type ProtocolErrorCode,
  type TagIndex,
} from "./frame-check.js";

const HEADER_BYTES = 4;

// Plain maps, no records: nothing a peer sends can define structures for us.
const packr = new Packr({ useRecords: false, moreTypes: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });

/** `n` bytes, not zeroed where the runtime can (Node's Buffer); zeroed elsewhere. */
const unzeroed: (n: number) => Uint8Array =
  typeof (globalThis as { Buffer?: unknown }).Buffer === "function"
    ? (n) => (globalThis as unknown as { Buffer: { allocUnsafe(n: number): Uint8Array } }).Buffer.allocUnsafe(n)
    : (n) => new Uint8Array(n);

/** Encodes one frame, header included. */
export function encodeFrame(frame: object, maxFrameBytes = DEFAULT_MAX_FRAME_BYTES): Uint8Array {
  const body = packr.pack(frame);
  if (body.length > maxFrameBytes) {
    throw new ProtocolError("frame_too_large", `Frame of ${body.length} bytes exceeds the ${maxFrameBytes}-byte limit`);
  }
  // Every byte is written just below, so the buffer need not be zeroed first (for a large
  // frame, zeroing cost more than encoding). packr's own buffer is reused by its next pack.
  const out = unzeroed(HEADER_BYTES + body.length);
  new DataView(out.buffer, out.byteOffset, HEADER_BYTES).setUint32(0, body.length, false);
  out.set(body, HEADER_BYTES);
  return out;
}

/** Decodes one frame body and checks it against `schema` (the option its tag names, when `index` is given). */
export function decodeFrame<S extends v.GenericSchema>(
  body: Uint8Array,
  schema: S,
  index?: TagIndex,
): v.InferOutput<S> {
  // Before the decoder allocates anything: depth, element count, lengths the bytes can hold.
  try {
    scanMsgpack(body, FRAME_BOUNDS);
  } catch (err) {
    const bounds = err as DocumentBoundsError;
    throw new ProtocolError(
      "malformed_frame",
      bounds.bound === "length"
        ? `Frame is not msgpack: ${bounds.message}`
        : `Frame is ${bounds.message} (the bound for any frame)`,
    );
  }
  return checkFrame(schema, () => unpackr.unpack(body), Array.isArray, index);
}

/**
 * Splits a byte stream into frame bodies. Handles split and coalesced writes;
 * chunks are kept as a list and joined once per frame, so a frame that arrives
 * in many pieces costs one copy, not one per piece.
 */
export class FrameReader {
  readonly #max: number;
  #chunks: Uint8Array[] = [];
  #head = 0; // index of the first unread chunk; avoids O(n) shift() per chunk
  #buffered = 0;
  #need = -1;

  constructor(maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {
    this.#max = maxFrameBytes;
  }

  /** Bytes held that do not yet form a whole frame. */
  get buffered(): number {
    return this.#buffered;
  }

  /** Feeds bytes; returns every complete frame body they finish. Throws ProtocolError on an oversized frame. */
  push(chunk: Uint8Array): Uint8Array[] {
    if (chunk.length > 0) {
      this.#chunks.push(chunk);
      this.#buffered += chunk.length;
    }
    const frames: Uint8Array[] = [];
    for (;;) {
      if (this.#need < 0) {
        if (this.#buffered < HEADER_BYTES) break;
        const header = this.#take(HEADER_BYTES);
        const size = new DataView(header.buffer, header.byteOffset, HEADER_BYTES).getUint32(0, false);
        if (size > this.#max) {
          this.#reset();
          throw new ProtocolError("frame_too_large", `Frame of ${size} bytes exceeds the ${this.#max}-byte limit`);
        }
        this.#need = size;
      }
      if (this.#buffered < this.#need) break;
      frames.push(this.#take(this.#need));
      this.#need = -1;
    }
    return frames;
  }

  /** Call at end of stream: a partial frame left over is a protocol error. */
  end(): void {
    if (this.#buffered > 0 || this.#need >= 0) {
      const held = this.#buffered;
      this.#reset();
      throw new ProtocolError("truncated_frame", `Stream ended inside a frame (${held} bytes held)`);
    }
  }

  #reset(): void {
    this.#chunks = [];
    this.#head = 0;
    this.#buffered = 0;
    this.#need = -1;
  }

  #dropHead(): void {
    this.#head++;
    if (this.#head === this.#chunks.length) {
      this.#chunks = [];
      this.#head = 0;
    } else if (this.#head >= 1024) {
      this.#chunks = this.#chunks.slice(this.#head);
      this.#head = 0;
    }
  }

  #take(n: number): Uint8Array {
    const first = this.#chunks[this.#head];
    if (first !== undefined && first.length >= n) {
      // Common case: the bytes sit in one chunk; hand out a view, no copy.
      const out = first.subarray(0, n);
      if (first.length === n) this.#dropHead();
      else this.#chunks[this.#head] = first.subarray(n);
      this.#buffered -= n;
      return out;
    }
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.#chunks[this.#head]!;
      const want = n - filled;
      if (chunk.length <= want) {
        out.set(chunk, filled);
        filled += chunk.length;
        this.#dropHead();
      } else {
        out.set(chunk.subarray(0, want), filled);
        this.#chunks[this.#head] = chunk.subarray(want);
        filled += want;
      }
    }
    this.#buffered -= n;
    return out;
  }
}
