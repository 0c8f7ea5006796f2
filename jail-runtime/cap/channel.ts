/**
 * The satellite's one connection to the broker: framed writes in order, and a
 * read loop that hands each decoded broker frame to a handler.
 */
import { BrokerFrame, type BrokerFrame as BrokerFrameT } from "../wire/frames.js";
import { FrameReader, decodeFrame, encodeFrame } from "../wire/codec.js";

export class Channel {
  readonly #conn: Deno.Conn;
  #writing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  static async open(path: string): Promise<Channel> {
    return new Channel(await Deno.connect({ transport: "unix", path }));
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Queues one frame; frames go out in the order they were sent. */
  send(frame: object): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("Channel is closed"));
    let bytes: Uint8Array;
    try {
      bytes = encodeFrame(frame);
    } catch (err) {
      // Too large or unencodable: the caller decides what to answer instead.
      return Promise.reject(err as Error);
    }
    const write = this.#writing.then(() => this.#writeAll(bytes));
    this.#writing = write.catch(() => {});
    return write;
  }

  async #writeAll(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < bytes.length) offset += await this.#conn.write(bytes.subarray(offset));
  }

  /** Reads frames until the broker closes the connection. */
  async readLoop(onFrame: (frame: BrokerFrameT) => void): Promise<void> {
    const reader = new FrameReader();
    // One read buffer for the connection's life; each read's bytes are copied
    // out (the reader may hold them), which costs n bytes, not a fresh 256 KiB.
    const buf = new Uint8Array(256 * 1024);
    for (;;) {
      const n = await this.#conn.read(buf);
      if (n === null) break;
      for (const body of reader.push(buf.slice(0, n))) onFrame(decodeFrame(body, BrokerFrame));
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
