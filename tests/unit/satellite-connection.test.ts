/**
 * The broker's end of a satellite socket sends a turn's first frame at once
 * and the frames after it together when the turn ends (the socket corked
 * until then), so several calls started by one read leave in two writes and
 * the satellite starts on the first while the broker goes on. No frame is
 * handed to the kernel before what it depends on was made durable.
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

/** Frames handed to the kernel, write by write, with whether the sending turn was still running; `seen` is told at once. */
function spyOnWrites(
  on: Socket,
  inTurn: () => boolean,
  seen: (ids: number[]) => void = () => {},
): Array<{ ids: number[]; inTurn: boolean }> {
  const writes: Array<{ ids: number[]; inTurn: boolean }> = [];
  const reader = new FrameReader();
  const idsOf = (chunks: Buffer[]) =>
    chunks.flatMap((chunk) =>
      [...reader.push(chunk)].map((body) => (decodeFrame(body, BrokerFrame) as { id: number }).id),
    );
  const socket = on as unknown as {
    _write(chunk: Buffer, encoding: string, cb: (err?: Error) => void): void;
    _writev(chunks: Array<{ chunk: Buffer }>, cb: (err?: Error) => void): void;
  };
  const write = socket._write.bind(on);
  const writev = socket._writev.bind(on);
  const handDown = (ids: number[]) => {
    seen(ids);
    writes.push({ ids, inTurn: inTurn() });
  };
  socket._write = (chunk, encoding, cb) => {
    handDown(idsOf([chunk]));
    write(chunk, encoding, cb);
  };
  socket._writev = (chunks, cb) => {
    handDown(idsOf(chunks.map((c) => c.chunk)));
    writev(chunks, cb);
  };
  return writes;
}

/** Every frame `other` receives, by id, resolved once `count` have come. */
function receive(other: Socket, count: number): Promise<number[]> {
  const reader = new FrameReader();
  const ids: number[] = [];
  return new Promise((resolve) =>
    other.on("data", (chunk: Buffer) => {
      for (const body of reader.push(chunk)) ids.push((decodeFrame(body, BrokerFrame) as { id: number }).id);
      if (ids.length === count) resolve(ids);
    }),
  );
}

const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));

/** A connection over `socket` whose durable point is `beforeSend`, and the errors it closed with. */
function connection(beforeSend?: () => void): { conn: SatelliteConnection; closed: Array<Error | null> } {
  const closed: Array<Error | null> = [];
  const events = { frame: () => {}, closed: (err: Error | null) => closed.push(err) };
  return { conn: new SatelliteConnection(socket, events, undefined, beforeSend), closed };
}

test.each([[[1]], [[2]], [[3]], [[8]], [[1, 3, 2, 5, 1]]])(
  "turns of %j frames: each turn's first leaves at once, the rest in one write at its end, all in order",
  async (sizes: number[]) => {
    const { conn } = connection();
    let inTurn = false;
    const writes = spyOnWrites(socket, () => inTurn);
    const total = sizes.reduce((a, b) => a + b, 0);
    const arrived = receive(await peer, total);
    const expected: Array<{ ids: number[]; inTurn: boolean }> = [];
    let id = 0;
    for (const size of sizes) {
      const turn = Array.from({ length: size }, () => ++id);
      inTurn = true;
      for (const frame of turn) expect(conn.send(call(frame))).toBe(true);
      inTurn = false;
      expected.push({ ids: turn.slice(0, 1), inTurn: true });
      if (size > 1) expected.push({ ids: turn.slice(1), inTurn: false });
      await endOfTurn();
    }
    expect(await arrived).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(writes).toEqual(expected);
  },
);

test("a connection closed before its turn ends sends nothing it held, and makes nothing durable for it", async () => {
  let durablePoints = 0;
  const { conn, closed } = connection(() => durablePoints++);
  const writes = spyOnWrites(socket, () => false);
  conn.send(call(1));
  conn.send(call(2));
  conn.close();
  await endOfTurn();
  expect(closed).toEqual([null]);
  expect(writes.map((w) => w.ids)).toEqual([[1]]);
  expect(durablePoints).toBe(1);
  expect(conn.send(call(3))).toBe(false);
});

test("frames sent after an await in the same turn wait for the turn's end with the rest", async () => {
  const { conn } = connection();
  let inTurn = true;
  const writes = spyOnWrites(socket, () => inTurn);
  const arrived = receive(await peer, 3);
  conn.send(call(1));
  await Promise.resolve();
  conn.send(call(2));
  await Promise.resolve();
  conn.send(call(3));
  inTurn = false;
  expect(await arrived).toEqual([1, 2, 3]);
  expect(writes).toEqual([
    { ids: [1], inTurn: true },
    { ids: [2, 3], inTurn: false },
  ]);
});

test("when the turn's end cannot be made durable after its first frame left, the rest are not sent", async () => {
  let points = 0;
  const { conn, closed } = connection(() => {
    if (points++ > 0) throw new Error("ENOSPC: no space left on device");
  });
  const other = await peer;
  const writes = spyOnWrites(socket, () => false);
  const received = receive(other, 1);
  const ended = new Promise<void>((resolve) => other.once("close", () => resolve()));
  for (const id of [1, 2, 3]) conn.send(call(id));
  expect(await received).toEqual([1]);
  await ended;
  expect(writes.map((w) => w.ids)).toEqual([[1]]);
  expect(closed).toHaveLength(1);
  expect(closed[0]!.message).toMatch(/^Not sent: the ledger's start journal could not be written \(ENOSPC/);
});

test.each([[[1]], [[4]], [[2, 1, 3]]])(
  "turns of %j frames: no frame is handed to the kernel before a durable point after its send",
  async (sizes: number[]) => {
    let sent = 0;
    let durableUpTo = 0;
    const { conn } = connection(() => {
      durableUpTo = sent;
    });
    // A frame handed down is late when no durable point came after its send.
    const late: number[] = [];
    const writes = spyOnWrites(
      socket,
      () => false,
      (ids) => late.push(...ids.filter((frame) => frame > durableUpTo)),
    );
    const total = sizes.reduce((a, b) => a + b, 0);
    const arrived = receive(await peer, total);
    for (const size of sizes) {
      for (let i = 0; i < size; i++) conn.send(call(++sent));
      await endOfTurn();
    }
    await arrived;
    expect(writes.flatMap((w) => w.ids)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(late).toEqual([]);
  },
);

test("when the turn's first frame cannot be made durable at once, it waits with the rest for the turn's end", async () => {
  let tries = 0;
  const { conn } = connection(() => {
    if (tries++ === 0) throw new Error("EAGAIN: try again");
  });
  let inTurn = true;
  const writes = spyOnWrites(socket, () => inTurn);
  const arrived = receive(await peer, 3);
  for (const id of [1, 2, 3]) expect(conn.send(call(id))).toBe(true);
  inTurn = false;
  expect(await arrived).toEqual([1, 2, 3]);
  expect(writes).toEqual([{ ids: [1, 2, 3], inTurn: false }]);
  expect(tries).toBe(2);
});

test("when no frame of a turn can be made durable, the connection fails and none is sent", async () => {
  const { conn, closed } = connection(() => {
    throw new Error("ENOSPC: no space left on device");
  });
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
