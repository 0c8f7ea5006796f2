/**
 * The first frame on a satellite's connection must be its `hello`: anything
 * else first is a protocol violation, and a connection closed before it fails
 * the boot (after a moment, so that a module that throws at load — the prelude
 * connects before the module runs — lets its exit and stderr say why). After
 * the hello, frames and the close go to the process.
 */
import type { Socket } from "node:net";
import type { Hello, SatelliteFrame } from "../../jail-runtime/wire/frames.js";
import { BrokerCode, TetherError } from "../base/errors.js";
import { SatelliteConnection } from "./connection.js";

export interface AfterHello {
  frame(frame: SatelliteFrame): void;
  closed(err: Error | null): void;
}

export function awaitHello(
  socket: Socket,
  name: string,
  maxFrameBytes: number,
  after: AfterHello,
  beforeSend?: () => void,
): { conn: SatelliteConnection; hello: Promise<Hello> } {
  let conn!: SatelliteConnection;
  const hello = new Promise<Hello>((resolve, reject) => {
    let greeted = false;
    conn = new SatelliteConnection(
      socket,
      {
        frame: (frame) => {
          if (greeted) return after.frame(frame);
          if (frame.t !== "hello") {
            conn.close(
              new TetherError(BrokerCode.protocolViolation, `Expected 'hello' as the first frame, got '${frame.t}'`),
            );
            return;
          }
          greeted = true;
          resolve(frame);
        },
        closed: (err) => {
          if (greeted) return after.closed(err);
          const fail = () =>
            reject(
              err ??
                new TetherError(BrokerCode.bootFailed, `Satellite '${name}' closed its socket before saying hello`),
            );
          if (err === null) setTimeout(fail, 1_000).unref();
          else fail();
        },
      },
      maxFrameBytes,
      beforeSend,
    );
  });
  return { conn, hello };
}
