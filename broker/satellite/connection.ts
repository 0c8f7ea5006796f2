/**
 * The broker's end of one satellite socket: decodes and checks every frame the
 * satellite sends, and closes the connection at the first protocol violation.
 * A turn of the event loop hands its first frame to the socket at once (it
 * leaves then, unless an earlier write is still going out) and the rest in
 * one write when the turn ends (the socket corked until its promise callbacks
 * have run): a read that answers several invocations starts the next ones in
 * that turn, and the satellite works on the first while the broker finishes
 * the others, where holding them all made the two wait on each other in turn.
 * Before any frame leaves, `beforeSend` makes what it depends on durable (the
 * ledger's journaled starts); when it cannot, the first frame is held to the
 * turn's end, and if it cannot then either, the connection fails and the
 * frames still held are not sent.
 */
import type { Socket } from "node:net";
import {
  DEFAULT_MAX_FRAME_BYTES,
  FrameReader,
  ProtocolError,
  decodeFrame,
  encodeFrame,
  tagIndex,
} from "../../jail-runtime/wire/codec.js";
import { SatelliteFrame, type BrokerFrame } from "../../jail-runtime/wire/frames.js";

const SATELLITE_FRAME_TAGS = tagIndex(SatelliteFrame);

/**
 * The most bytes sent and not yet read by the satellite the broker holds for it (Node's write buffer
 * grows without bound): room for two frames of the largest size. A satellite that asks and never reads
 * the answers is disconnected past it, so it cannot make the broker hold what it is owed.
 */
export function unreadBound(maxFrameBytes: number): number {
  return 2 * (4 + maxFrameBytes);
}
export const MAX_UNREAD_BYTES = unreadBound(DEFAULT_MAX_FRAME_BYTES);

export interface ConnectionEvents {
  frame(frame: SatelliteFrame): void;
  /** The connection ended; `err` is set when it ended on a protocol violation or socket error. */
  closed(err: ProtocolError | Error | null): void;
}

export class SatelliteConnection {
  readonly #socket: Socket;
  readonly #reader: FrameReader;
  readonly #maxFrameBytes: number;
  readonly #maxUnread: number;
  readonly #events: ConnectionEvents;
  readonly #beforeSend: (() => void) | undefined;
  #done = false;
  #corked = false;
  readonly #uncork = (): void => {
    this.#corked = false;
    if (this.#done) return;
    const failed = this.#makeDurable();
    if (failed !== null) {
      this.#finish(new Error(`Not sent: the ledger's start journal could not be written (${failed.message})`));
      return;
    }
    this.#socket.uncork();
  };

  /** Makes what the frames sent so far depend on durable: null, or why it could not. */
  #makeDurable(): Error | null {
    try {
      this.#beforeSend?.();
      return null;
    } catch (err) {
      return err as Error;
    }
  }

  constructor(
    socket: Socket,
    events: ConnectionEvents,
    maxFrameBytes = DEFAULT_MAX_FRAME_BYTES,
    beforeSend?: () => void,
  ) {
    this.#socket = socket;
    this.#beforeSend = beforeSend;
    this.#maxFrameBytes = maxFrameBytes;
    this.#maxUnread = unreadBound(maxFrameBytes);
    this.#reader = new FrameReader(maxFrameBytes);
    this.#events = events;
    const finish = (err: ProtocolError | Error | null) => this.#finish(err);
    socket.on("data", (chunk: Buffer) => {
      if (this.#done) return;
      try {
        for (const body of this.#reader.push(chunk)) {
          events.frame(decodeFrame(body, SatelliteFrame, SATELLITE_FRAME_TAGS));
          if (this.#done) return;
        }
      } catch (err) {
        finish(err as Error);
      }
    });
    socket.on("end", () => {
      try {
        this.#reader.end();
        finish(null);
      } catch (err) {
        finish(err as Error);
      }
    });
    socket.on("error", (err) => finish(err));
    socket.on("close", () => finish(null));
  }

  get open(): boolean {
    return !this.#done;
  }

  /** Sends one frame; false when the connection is gone. */
  send(frame: BrokerFrame): boolean {
    if (this.#done) return false;
    const bytes = encodeFrame(frame, this.#maxFrameBytes);
    if (!this.#corked) {
      this.#corked = true;
      setImmediate(this.#uncork);
      // When it cannot be made durable now, the frame waits for the turn's end, which reports a second failure.
      const now = this.#makeDurable() === null;
      try {
        if (now) this.#socket.write(bytes);
      } finally {
        this.#socket.cork();
      }
      if (now) {
        this.#checkUnread();
        return true;
      }
    }
    this.#socket.write(bytes);
    this.#checkUnread();
    return true;
  }

  /** Past MAX_UNREAD_BYTES (`unreadBound`) sent and not read, the satellite is disconnected. */
  #checkUnread(): void {
    const unread = this.#socket.writableLength;
    if (unread <= this.#maxUnread) return;
    this.#finish(
      new Error(`The satellite has not read ${unread} bytes sent to it, over the ${this.#maxUnread}-byte bound`),
    );
  }

  /** Ends the connection now; `closed` fires with `err`. */
  close(err: Error | null = null): void {
    this.#finish(err);
  }

  #finish(err: ProtocolError | Error | null): void {
    if (this.#done) return;
    this.#done = true;
    this.#socket.destroy();
    this.#events.closed(err);
  }
}

export { ProtocolError };
