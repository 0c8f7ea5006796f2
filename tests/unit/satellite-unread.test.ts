/**
 * A satellite that asks and never reads the answers: what the broker still owes it waits in the
 * socket's write buffer, which Node grows without bound. The connection holds at most
 * MAX_UNREAD_BYTES unread; past them the satellite is disconnected.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encodeFrame } from "../../jail-runtime/wire/codec.js";
import { MAX_UNREAD_BYTES, SatelliteConnection } from "../../broker/satellite/connection.js";
import { memoryInUse } from "./support/memory-in-use.js";

let dir: string;
let server: Server;

afterEach(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

test("a satellite that never reads what it asked for cannot make the broker hold more than MAX_UNREAD_BYTES", async () => {
  dir = mkdtempSync(join(tmpdir(), "tether-unread-"));
  const path = join(dir, "s.sock");
  server = createServer();
  const accepted = new Promise<Socket>((resolve) => server.once("connection", resolve));
  await new Promise<void>((resolve) => server.listen(path, resolve));
  // The satellite: writes cap calls, never reads (paused, so the kernel's buffer fills and stays full).
  const satellite = connect(path);
  satellite.pause();
  await new Promise<void>((resolve) => satellite.once("connect", () => resolve()));
  const brokerEnd = await accepted;

  const before = memoryInUse();
  const answer = "x".repeat(256 * 1024);
  let closed: Error | null | undefined;
  const conn = new SatelliteConnection(brokerEnd, {
    // As SatelliteProcess answers a cap: a cap_result per call (here a 256 KiB kv value each).
    frame: (frame) => {
      if (frame.t === "cap") conn.send({ t: "cap_result", id: frame.id, ok: true, value: answer });
    },
    closed: (err) => (closed = err),
  });
  const calls = 2_000; // ~100 bytes each asked; 500 MiB owed
  let most = 0;
  for (let id = 1; id <= calls && closed === undefined; id++) {
    satellite.write(encodeFrame({ t: "cap", id, token: "t".repeat(32), cap: "kv.get", args: "{}" }));
    if (id % 50 === 0) {
      await new Promise((r) => setImmediate(r));
      most = Math.max(most, brokerEnd.writableLength);
    }
  }
  await new Promise((r) => setTimeout(r, 50));
  most = Math.max(most, brokerEnd.writableLength);
  const held = memoryInUse() - before;
  const why = closed;
  satellite.destroy();
  conn.close();
  closed = why;
  expect(closed).toBeInstanceOf(Error);
  expect(closed?.message).toMatch(/has not read \d+ bytes sent to it/);
  expect(most).toBeLessThanOrEqual(MAX_UNREAD_BYTES + 256 * 1024 + 64);
  expect(held).toBeLessThan(2 * MAX_UNREAD_BYTES);
}, 60_000);
