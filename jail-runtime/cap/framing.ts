/**
 * The satellite's side of the framing (a 4-byte big-endian length, then one
 * msgpack map), on captured built-ins like `msgpack.ts`: what the broker's
 * `jail-runtime/wire/codec.ts` does with msgpackr, with the same limits, the
 * same schemas (`wire/frames.ts`), the same error codes and the same wording.
 */
import type * as v from "valibot";
import { DEFAULT_MAX_FRAME_BYTES, ProtocolError, checkFrame, tagIndex } from "../wire/frame-check.js";
import { BrokerFrame } from "../wire/frames.js";
import {
  DV,
  SafeMap,
  U8,
  arrayIsArray,
  dvGetUint32,
  dvSetUint32,
  mapDelete,
  mapGet,
  mapSet,
  u8Buffer,
  u8ByteOffset,
  u8Length,
  u8Set,
  u8Subarray,
} from "./intrinsics.js";
import { Writer, decodeValue, encodeValue } from "./msgpack.js";

const HEADER_BYTES = 4;
/** Made when the runtime loads, before any extension code runs. */
const BROKER_FRAME_TAGS = tagIndex(BrokerFrame);

/**
 * Encodes one frame, header included, into `out` (a fresh writer, or one the
 * caller reuses once its last frame is written: a large buffer is costly to
 * allocate — the kernel maps and zeroes it — and cheap to keep). The answer is
 * a view on the writer's buffer. Throws `ProtocolError` past the limit.
 */
export function encodeFrame(
  frame: object,
  maxFrameBytes = DEFAULT_MAX_FRAME_BYTES,
  out: Writer = new Writer(HEADER_BYTES),
): Uint8Array {
  out.reset(HEADER_BYTES);
  encodeValue(out, frame);
  const size = out.length - HEADER_BYTES;
  if (size > maxFrameBytes)
    throw new ProtocolError("frame_too_large", `Frame of ${size} bytes exceeds the ${maxFrameBytes}-byte limit`);
  dvSetUint32(out.view, 0, size, false); // the reserved header: `view` is read after the last `room`
  return out.bytes();
}

/** Decodes one frame body the broker sent and checks it against the broker's frame schemas. */
export function decodeBrokerFrame(body: Uint8Array): v.InferOutput<typeof BrokerFrame> {
  return checkFrame(BrokerFrame, () => decodeValue(body), arrayIsArray, BROKER_FRAME_TAGS);
}

/**
 * Splits the byte stream into frame bodies. Chunks are held as they came and
 * joined once per frame; a frame inside one chunk is handed out as a view.
 */
export class FrameSplitter {
  readonly #max: number;
  readonly #chunks = new SafeMap<number, Uint8Array>();
  #head = 0;
  #tail = 0;
  #buffered = 0;
  #need = -1;

  constructor(maxFrameBytes = DEFAULT_MAX_FRAME_BYTES) {
    this.#max = maxFrameBytes;
  }

  /** Feeds bytes (kept, not copied: pass bytes nobody reuses); calls `onBody` for each frame they complete. */
  push(chunk: Uint8Array, onBody: (body: Uint8Array) => void): void {
    if (u8Length(chunk) > 0) {
      mapSet(this.#chunks, this.#tail++, chunk);
      this.#buffered += u8Length(chunk);
    }
    for (;;) {
      if (this.#need < 0) {
        if (this.#buffered < HEADER_BYTES) return;
        const header = this.#take(HEADER_BYTES);
        const size = dvGetUint32(viewOf(header), 0, false);
        if (size > this.#max)
          throw new ProtocolError("frame_too_large", `Frame of ${size} bytes exceeds the ${this.#max}-byte limit`);
        this.#need = size;
      }
      if (this.#buffered < this.#need) return;
      const body = this.#take(this.#need);
      this.#need = -1;
      onBody(body);
    }
  }

  #take(n: number): Uint8Array {
    const first = mapGet(this.#chunks, this.#head)!;
    if (u8Length(first) >= n) {
      const out = u8Subarray(first, 0, n);
      this.#consume(first, n);
      this.#buffered -= n;
      return out;
    }
    const out = new U8(n);
    let filled = 0;
    while (filled < n) {
      const chunk = mapGet(this.#chunks, this.#head)!;
      const used = u8Length(chunk) <= n - filled ? u8Length(chunk) : n - filled;
      u8Set(out, u8Subarray(chunk, 0, used), filled);
      filled += used;
      this.#consume(chunk, used);
    }
    this.#buffered -= n;
    return out;
  }

  /** Drops `n` bytes from the head chunk. */
  #consume(chunk: Uint8Array, n: number): void {
    if (n === u8Length(chunk)) mapDelete(this.#chunks, this.#head++);
    else mapSet(this.#chunks, this.#head, u8Subarray(chunk, n));
  }
}

/** A DataView over exactly the bytes of `bytes`. */
function viewOf(bytes: Uint8Array): DataView {
  return new DV(u8Buffer(bytes), u8ByteOffset(bytes), u8Length(bytes));
}
