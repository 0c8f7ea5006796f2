/**
 * The satellite's one connection to the broker: framed writes in order, and a
 * read loop that hands each decoded broker frame to a handler. Built by the
 * prelude over the connection it opened, before any extension code ran; it
 * calls only the connection's own (bound) methods and captured built-ins.
 */
import type { BrokerFrame as BrokerFrameT } from "../wire/frames.js";
import { FrameSplitter, decodeBrokerFrame, encodeFrame } from "./framing.js";
import { Writer } from "./msgpack.js";
import {
  SafeError,
  SafeMap,
  SafePromise,
  U8,
  mapDelete,
  mapGet,
  mapSet,
  u8Length,
  u8Set,
  u8Slice,
  u8Subarray,
} from "./intrinsics.js";

/** The largest encoding buffer kept for the next frame; a larger one is let go. */
const SPARE_MAX_BYTES = 1024 * 1024;
/** Encoding buffers kept for the next frames: enough for the frames of a few invocations answered together. */
const SPARES_KEPT = 16;
/** Frames queued together are written in one write up to this many bytes (one syscall, not one each). */
const COALESCE_MAX_BYTES = 64 * 1024;

const ignore = (): void => {};

interface Queued {
  readonly bytes: Uint8Array;
  readonly writer: Writer;
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

function rejected(err: Error): Promise<never> {
  return new SafePromise<never>((_, reject) => reject(err));
}

export class Channel {
  readonly #conn: Deno.Conn;
  // Frames waiting to be written, oldest first (a map: no Array.prototype method on the way).
  readonly #queue = new SafeMap<number, Queued>();
  #head = 0;
  #tail = 0;
  #pumping = false;
  #closed = false;
  // Buffers of frames written, free for the next ones (a map used as a stack: no Array.prototype method).
  readonly #spares = new SafeMap<number, Writer>();
  #spareCount = 0;

  /** `conn`'s methods are called as its own properties: the prelude passes them bound to the real connection. */
  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Queues one frame; frames go out in the order they were sent. Settles when it was written. */
  send(frame: object): Promise<void> {
    if (this.#closed) return rejected(new SafeError("Channel is closed"));
    return new SafePromise<void>((resolve, reject) => {
      const failed = this.#enqueue(frame, resolve, reject);
      if (failed !== null) reject(failed);
    });
  }

  /**
   * Queues one frame and does not wait for it to be written: the error when it
   * cannot be encoded (too large, unencodable), else null. What the broker is
   * answered with; a write that fails closes the channel, which ends the loop.
   */
  post(frame: object): Error | null {
    if (this.#closed) return new SafeError("Channel is closed");
    return this.#enqueue(frame, ignore, ignore);
  }

  #enqueue(frame: object, resolve: () => void, reject: (err: Error) => void): Error | null {
    let bytes: Uint8Array;
    // The buffer of a frame already written, if one is free (frames still queued hold theirs).
    const writer = this.#takeSpare() ?? new Writer(0);
    try {
      bytes = encodeFrame(frame, undefined, writer);
    } catch (err) {
      this.#keepSpare(writer);
      // Too large or unencodable: the caller decides what to answer instead.
      return err as Error;
    }
    mapSet(this.#queue, this.#tail++, { bytes, writer, resolve, reject });
    if (!this.#pumping) void this.#pump();
    return null;
  }

  #takeSpare(): Writer | null {
    if (this.#spareCount === 0) return null;
    const writer = mapGet(this.#spares, --this.#spareCount)!;
    mapDelete(this.#spares, this.#spareCount);
    return writer;
  }

  #keepSpare(writer: Writer): void {
    // A buffer grown past SPARE_MAX_BYTES (one large answer) is let go.
    if (this.#spareCount < SPARES_KEPT && writer.capacity <= SPARE_MAX_BYTES)
      mapSet(this.#spares, this.#spareCount++, writer);
  }

  // Plain awaits, no .then/.catch and no promise returned from an async function:
  // a patched Promise.prototype.then is never called on the way out.
  async #pump(): Promise<void> {
    this.#pumping = true;
    while (this.#head < this.#tail) {
      const batch = this.#takeBatch();
      try {
        await this.#writeAll(batch.bytes);
        for (let i = 0; i < batch.items.length; i++) {
          const item = batch.items[i]!;
          this.#keepSpare(item.writer);
          item.resolve();
        }
      } catch (err) {
        for (let i = 0; i < batch.items.length; i++) batch.items[i]!.reject(err as Error);
      }
    }
    this.#pumping = false;
  }

  /** The oldest queued frame, with those queued after it while they fit in one write. */
  #takeBatch(): { bytes: Uint8Array; items: Queued[] } {
    const first = mapGet(this.#queue, this.#head)!;
    mapDelete(this.#queue, this.#head++);
    const items: Queued[] = [first];
    let total = u8Length(first.bytes);
    while (this.#head < this.#tail) {
      const next = mapGet(this.#queue, this.#head)!;
      if (total + u8Length(next.bytes) > COALESCE_MAX_BYTES) break;
      mapDelete(this.#queue, this.#head++);
      items[items.length] = next;
      total += u8Length(next.bytes);
    }
    if (items.length === 1) return { bytes: first.bytes, items };
    const bytes = new U8(total);
    let at = 0;
    for (let i = 0; i < items.length; i++) {
      u8Set(bytes, items[i]!.bytes, at);
      at += u8Length(items[i]!.bytes);
    }
    return { bytes, items };
  }

  async #writeAll(bytes: Uint8Array): Promise<void> {
    const length = u8Length(bytes);
    let offset = 0;
    while (offset < length) offset += await this.#conn.write(u8Subarray(bytes, offset));
  }

  /** Reads frames until the broker closes the connection. */
  async readLoop(onFrame: (frame: BrokerFrameT) => void): Promise<void> {
    const splitter = new FrameSplitter();
    // One read buffer for the connection's life; each read's bytes are copied
    // out (the splitter may hold them), which costs n bytes, not a fresh 256 KiB.
    const buf = new U8(256 * 1024);
    for (;;) {
      const n = await this.#conn.read(buf);
      if (n === null) break;
      splitter.push(u8Slice(buf, 0, n), (body) => onFrame(decodeBrokerFrame(body)));
    }
    this.close();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#conn.close();
    } catch {
      // already closed by the peer
    }
  }
}
