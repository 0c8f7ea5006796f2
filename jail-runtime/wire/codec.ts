/**
 * Frame codec: a 4-byte big-endian length, then one msgpack map.
 *
 * Shared by the broker and the satellite runtime; no runtime-specific imports.
 */
import { Packr, Unpackr } from "msgpackr";
import * as v from "valibot";
import { FRAME_BOUNDS, scanMsgpack, type DocumentBoundsError } from "./document-bounds.js";
import { describeIssues } from "./frames.js";

/** Default bound on one frame's body, enforced by both sides. */
export const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;
const HEADER_BYTES = 4;

export type ProtocolErrorCode = "frame_too_large" | "malformed_frame" | "truncated_frame" | "unexpected_frame";

/** A violation of the wire protocol: the connection that carried it is closed. */
export class ProtocolError extends Error {
  override readonly name = "ProtocolError";
  constructor(
    readonly code: ProtocolErrorCode,
    message: string,
  ) {
    super(message);
  }
}

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

/**
 * A variant of frame schemas by their literal tags (`t`), made once before any
 * frame is read: a frame is checked against the one option its tag names.
 * valibot's variant tries each option's tag in turn, building objects per
 * try (a third of a small frame's check). Plain loops and indexing only: the
 * satellite's copy runs beside extension code, which may have patched methods.
 */
export interface TagIndex {
  readonly key: string;
  readonly tags: readonly unknown[];
  readonly options: readonly v.GenericSchema[];
}

export function tagIndex(
  schema: v.VariantSchema<string, v.VariantOptions<string>, v.ErrorMessage<v.VariantIssue> | undefined>,
): TagIndex {
  const tags: unknown[] = [];
  const options: v.GenericSchema[] = [];
  for (let i = 0; i < schema.options.length; i++) {
    const option = schema.options[i]!;
    const tag = (option as { entries: Record<string, v.GenericSchema> }).entries[schema.key];
    // Only literal tags are indexed; any other option leaves the variant to valibot.
    if (option.type !== "object" || tag?.type !== "literal") return { key: schema.key, tags: [], options: [] };
    tags[i] = (tag as v.LiteralSchema<v.Literal, undefined>).literal;
    options[i] = option;
  }
  return { key: schema.key, tags, options };
}

/** The option of `index` that `raw`'s tag names, or `fallback` (the whole variant, for its error). */
function optionFor(index: TagIndex | undefined, raw: object, fallback: v.GenericSchema): v.GenericSchema {
  if (index === undefined) return fallback;
  const tag = (raw as Record<string, unknown>)[index.key];
  for (let i = 0; i < index.tags.length; i++) if (index.tags[i] === tag) return index.options[i]!;
  return fallback;
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
 * Decodes a frame body with `decode` and checks it against `schema`, in the
 * wording both sides of the wire share. `isArray` is the caller's: the
 * satellite passes one captured before extension code ran.
 */
export function checkFrame<S extends v.GenericSchema>(
  schema: S,
  decode: () => unknown,
  isArray: (value: unknown) => boolean,
  index?: TagIndex,
): v.InferOutput<S> {
  let raw: unknown;
  try {
    raw = decode();
  } catch (err) {
    throw new ProtocolError("malformed_frame", `Frame is not msgpack: ${(err as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || isArray(raw))
    throw new ProtocolError("malformed_frame", "Frame is not a msgpack map");
  const parsed = v.safeParse(optionFor(index, raw, schema), raw);
  if (!parsed.success) {
    const t = (raw as { t?: unknown }).t;
    throw new ProtocolError(
      "malformed_frame",
      `Bad ${typeof t === "string" ? `'${t.slice(0, 32)}' ` : ""}frame: ${describeIssues(parsed.issues)}`,
    );
  }
  return parsed.output;
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
