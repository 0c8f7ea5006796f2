/**
 * The broker's end of one satellite socket: decodes and checks every frame the
 * satellite sends, and closes the connection at the first protocol violation.
 * Frames sent in one turn of the event loop go out in one write: the socket is
 * corked at the turn's first frame and uncorked once the turn's promise
 * callbacks have run (a read that answers several invocations starts the next
 * ones in that same turn). Before the turn's frames leave, `beforeSend` makes
 * what they depend on durable (the ledger's journaled starts); when it cannot,
 * the connection fails and nothing is sent.
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

export interface ConnectionEvents {
  frame(frame: SatelliteFrame): void;
  /** The connection ended; `err` is set when it ended on a protocol violation or socket error. */
  closed(err: ProtocolError | Error | null): void;
}

export class SatelliteConnection {
  readonly #socket: Socket;
  readonly #reader: FrameReader;
  readonly #maxFrameBytes: number;
  readonly #events: ConnectionEvents;
  readonly #beforeSend: (() => void) | undefined;
  #done = false;
  #corked = false;
  readonly #uncork = (): void => {
    this.#corked = false;
    if (this.#done) return;
    try {
      this.#beforeSend?.();
    } catch (err) {
      this.#finish(new Error(`Not sent: the ledger's start journal could not be written (${(err as Error).message})`));
      return;
    }
    this.#socket.uncork();
  };

  constructor(
    socket: Socket,
    events: ConnectionEvents,
    maxFrameBytes = DEFAULT_MAX_FRAME_BYTES,
    beforeSend?: () => void,
  ) {
    this.#socket = socket;
    this.#beforeSend = beforeSend;
    this.#maxFrameBytes = maxFrameBytes;
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
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      setImmediate(this.#uncork);
    }
    this.#socket.write(encodeFrame(frame, this.#maxFrameBytes));
    return true;
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
