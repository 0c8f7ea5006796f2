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
import { HeldBytes } from "./held-bytes.js";

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
// copyBuffers: a binary value is decoded as a copy, not a view of the frame's bytes (a view kept anywhere
// would keep the whole frame, up to 16 MiB, or the socket's read alive).
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number", copyBuffers: true });

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
 * Splits a byte stream into frame bodies. Frames a chunk holds whole are handed out as views of it;
 * the bytes of one still arriving are held in one buffer (`HeldBytes`), however the peer splits them:
 * a satellite writing a byte at a time cannot make a frame's bytes cost an object each.
 */
export class FrameReader {
  readonly #max: number;
  readonly #held: HeldBytes;
  /** The body size the held header announced, or -1 while no header is whole. */
  #need = -1;

  constructor(maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {
    this.#max = maxFrameBytes;
    this.#held = new HeldBytes(HEADER_BYTES + maxFrameBytes);
  }

  /** Bytes held toward the next frame (its header's once it was read are not counted). */
  get buffered(): number {
    return this.#need < 0 ? this.#held.size : this.#held.size - HEADER_BYTES;
  }

  /** Feeds bytes; returns every complete frame body they finish. Throws ProtocolError on an oversized frame. */
  push(chunk: Uint8Array): Uint8Array[] {
    const frames: Uint8Array[] = [];
    let at = 0;
    for (;;) {
      if (this.#held.size > 0) {
        // A header or a frame begun in an earlier chunk: completed from this one.
        const whole = this.#need < 0 ? HEADER_BYTES : HEADER_BYTES + this.#need;
        const part = Math.min(whole - this.#held.size, chunk.length - at);
        this.#held.append(chunk.subarray(at, at + part), whole);
        at += part;
        if (this.#held.size < whole) return frames;
        if (this.#need < 0) {
          this.#need = this.#size(this.#held.view(), 0);
          continue;
        }
        frames.push(this.#held.view().subarray(HEADER_BYTES));
        this.#held.release();
        this.#need = -1;
        continue;
      }
      const left = chunk.length - at;
      if (left === 0) return frames;
      if (left < HEADER_BYTES) {
        this.#held.append(chunk.subarray(at));
        return frames;
      }
      const size = this.#size(chunk, at);
      if (left - HEADER_BYTES >= size) {
        // Whole in this chunk: a view, no copy.
        frames.push(chunk.subarray(at + HEADER_BYTES, at + HEADER_BYTES + size));
        at += HEADER_BYTES + size;
        continue;
      }
      this.#need = size;
      this.#held.append(chunk.subarray(at), HEADER_BYTES + size);
      return frames;
    }
  }

  /** Call at end of stream: a partial frame left over is a protocol error. */
  end(): void {
    if (this.#held.size > 0) {
      const held = this.buffered;
      this.#reset();
      throw new ProtocolError("truncated_frame", `Stream ended inside a frame (${held} bytes held)`);
    }
  }

  /** The body size the header at `at` announces; past the limit, a ProtocolError (and nothing held). */
  #size(bytes: Uint8Array, at: number): number {
    const size = new DataView(bytes.buffer, bytes.byteOffset + at, HEADER_BYTES).getUint32(0, false);
    if (size > this.#max) {
      this.#reset();
      throw new ProtocolError("frame_too_large", `Frame of ${size} bytes exceeds the ${this.#max}-byte limit`);
    }
    return size;
  }

  #reset(): void {
    this.#held.release();
    this.#need = -1;
  }
}
