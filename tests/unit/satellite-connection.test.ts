/**
 * The broker's end of a satellite socket writes the frames of one event-loop
 * turn together: corked at the turn's first frame, uncorked after the turn,
 * so several calls started by one read leave in one write.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FrameReader, decodeFrame } from "../../jail-runtime/wire/codec.js";
import { BrokerFrame } from "../../jail-runtime/wire/frames.js";
import { SatelliteConnection } from "../../broker/satellite/connection.js";

let dir: string;
let server: Server;
let peer: Promise<Socket>;
let socket: Socket;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "tether-conn-"));
  const path = join(dir, "s.sock");
  server = createServer();
  peer = new Promise((resolve) => server.once("connection", resolve));
  await new Promise<void>((resolve) => server.listen(path, resolve));
  socket = connect(path);
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
});

afterEach(async () => {
  socket.destroy();
  (await peer).destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

const call = (id: number) =>
  ({
    t: "call",
    id,
    token: "t".repeat(32),
    kind: "tool",
    name: "echo",
    args: "{}",
    strand: "",
    deadline_ms: 1000,
  }) as const;

test("frames sent in one turn are held until the turn ends, then all arrive in order", async () => {
  const conn = new SatelliteConnection(socket, { frame: () => {}, closed: () => {} });
  const other = await peer;
  const reader = new FrameReader();
  const ids: number[] = [];
  const arrived = new Promise<void>((resolve) =>
    other.on("data", (chunk: Buffer) => {
      for (const body of reader.push(chunk)) ids.push((decodeFrame(body, BrokerFrame) as { id: number }).id);
      if (ids.length === 3) resolve();
    }),
  );
  for (const id of [1, 2, 3]) expect(conn.send(call(id))).toBe(true);
  // Nothing has been handed to the kernel yet: the three wait for one write.
  expect(socket.writableCorked).toBe(1);
  expect(socket.writableLength).toBeGreaterThan(0);
  await new Promise((resolve) => setImmediate(resolve));
  expect(socket.writableCorked).toBe(0);
  await arrived;
  expect(ids).toEqual([1, 2, 3]);
});

test("a connection closed before its turn ends is not uncorked into a destroyed socket", async () => {
  const closed: Array<Error | null> = [];
  const conn = new SatelliteConnection(socket, { frame: () => {}, closed: (err) => closed.push(err) });
  conn.send(call(1));
  conn.close();
  await new Promise((resolve) => setImmediate(resolve));
  expect(closed).toEqual([null]);
  expect(conn.send(call(2))).toBe(false);
});

test("what must be durable first is made so before the turn's frames leave, once per turn", async () => {
  const order: string[] = [];
  const conn = new SatelliteConnection(socket, { frame: () => {}, closed: () => {} }, undefined, () => {
    // Still corked: nothing of the turn's frames has been handed to the kernel.
    order.push(`durable (corked ${socket.writableCorked}, ${socket.writableLength > 0 ? "frames held" : "none"})`);
  });
  const other = await peer;
  const arrived = new Promise<void>((resolve) => other.once("data", () => resolve()));
  conn.send(call(1));
  conn.send(call(2));
  await arrived;
  order.push("arrived");
  expect(order).toEqual(["durable (corked 1, frames held)", "arrived"]);
});

test("when it cannot be made durable, the connection fails and no frame of the turn is sent", async () => {
  const closed: Array<Error | null> = [];
  const conn = new SatelliteConnection(
    socket,
    { frame: () => {}, closed: (err) => closed.push(err) },
    undefined,
    () => {
      throw new Error("ENOSPC: no space left on device");
    },
  );
  const other = await peer;
  let received = 0;
  other.on("data", (chunk: Buffer) => (received += chunk.length));
  const ended = new Promise<void>((resolve) => other.once("close", () => resolve()));
  conn.send(call(1));
  await ended;
  expect(received).toBe(0);
  expect(closed).toHaveLength(1);
  expect(closed[0]!.message).toMatch(/^Not sent: the ledger's start journal could not be written \(ENOSPC/);
  expect(conn.send(call(2))).toBe(false);
});
