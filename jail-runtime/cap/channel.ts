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
  u8Slice,
  u8Subarray,
} from "./intrinsics.js";

/** The largest encoding buffer kept for the next frame; a larger one is let go. */
const SPARE_MAX_BYTES = 1024 * 1024;

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
  #spare: Writer | null = null;

  /** `conn`'s methods are called as its own properties: the prelude passes them bound to the real connection. */
  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Queues one frame; frames go out in the order they were sent. */
  send(frame: object): Promise<void> {
    if (this.#closed) return rejected(new SafeError("Channel is closed"));
    let bytes: Uint8Array;
    // The buffer of the last frame written, if it is free (frames still queued hold theirs).
    const writer = this.#spare ?? new Writer(0);
    this.#spare = null;
    try {
      bytes = encodeFrame(frame, undefined, writer);
    } catch (err) {
      this.#spare = writer;
      // Too large or unencodable: the caller decides what to answer instead.
      return rejected(err as Error);
    }
    return new SafePromise<void>((resolve, reject) => {
      mapSet(this.#queue, this.#tail++, { bytes, writer, resolve, reject });
      if (!this.#pumping) void this.#pump();
    });
  }

  // Plain awaits, no .then/.catch and no promise returned from an async function:
  // a patched Promise.prototype.then is never called on the way out.
  async #pump(): Promise<void> {
    this.#pumping = true;
    while (this.#head < this.#tail) {
      const item = mapGet(this.#queue, this.#head)!;
      mapDelete(this.#queue, this.#head++);
      try {
        await this.#writeAll(item.bytes);
        if (item.writer.capacity <= SPARE_MAX_BYTES) this.#spare = item.writer;
        item.resolve();
      } catch (err) {
        item.reject(err as Error);
      }
    }
    this.#pumping = false;
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
