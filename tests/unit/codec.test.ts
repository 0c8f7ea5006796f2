/**
 * The frame codec: 4-byte big-endian length + one msgpack map, checked by schema.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { Packr } from "msgpackr";
import * as v from "valibot";
import {
  DEFAULT_MAX_FRAME_BYTES,
  FrameReader,
  ProtocolError,
  decodeFrame,
  encodeFrame,
  tagIndex,
  type ProtocolErrorCode,
} from "../../jail-runtime/wire/codec.js";
import { BrokerFrame, SatelliteFrame, type Cap } from "../../jail-runtime/wire/frames.js";
import { anyFrame, concat, encodeStream, splitAt, type Directed } from "./support/arbitraries.js";
import { memoryInUse } from "./support/memory-in-use.js";

const packr = new Packr({ useRecords: false, moreTypes: false });

/** A 4-byte big-endian length header. */
function header(size: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, size, false);
  return out;
}

/** Frames a raw msgpack body (no schema involved). */
function framed(body: Uint8Array): Uint8Array {
  return concat([header(body.length), body]);
}

/** Runs `fn` and returns the ProtocolError it throws; fails the test if it throws anything else or nothing. */
function protocolError(fn: () => unknown): ProtocolError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ProtocolError);
    return err as ProtocolError;
  }
  throw new Error("Expected a ProtocolError, but nothing was thrown");
}

function expectCode(fn: () => unknown, code: ProtocolErrorCode): ProtocolError {
  const err = protocolError(fn);
  expect(err.code).toBe(code);
  return err;
}

/** Pushes every piece and decodes every frame body the reader hands back. */
function readAll(reader: FrameReader, pieces: readonly Uint8Array[], schemas: readonly v.GenericSchema[]): unknown[] {
  const out: unknown[] = [];
  for (const piece of pieces) {
    for (const body of reader.push(piece)) {
      const schema = schemas[out.length];
      if (schema === undefined) throw new Error(`Reader produced more frames than were sent (${out.length + 1})`);
      out.push(decodeFrame(body, schema));
    }
  }
  return out;
}

describe("encodeFrame() and decodeFrame()", () => {
  test("any valid frame round-trips through encodeFrame, FrameReader.push and decodeFrame", () => {
    fc.assert(
      fc.property(anyFrame, ({ frame, schema }) => {
        const reader = new FrameReader();
        const bodies = reader.push(encodeFrame(frame));
        expect(bodies).toHaveLength(1);
        expect(decodeFrame(bodies[0]!, schema)).toEqual(frame);
        expect(reader.buffered).toBe(0);
        expect(() => reader.end()).not.toThrow();
      }),
    );
  });

  test("encodeFrame() writes the body length as a 4-byte big-endian header", () => {
    fc.assert(
      fc.property(anyFrame, ({ frame }) => {
        const bytes = encodeFrame(frame);
        const size = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, false);
        expect(size).toBe(bytes.length - 4);
        expect(bytes.subarray(4)).toEqual(new Uint8Array(packr.pack(frame)));
      }),
    );
  });

  test("encodeFrame() refuses a body over the maximum with frame_too_large and accepts one exactly at it", () => {
    const frame = { t: "cancel", id: 1, pad: "x".repeat(100) };
    const size = packr.pack(frame).length;
    expect(encodeFrame(frame, size)).toHaveLength(size + 4);
    const err = expectCode(() => encodeFrame(frame, size - 1), "frame_too_large");
    expect(err.message).toBe(`Frame of ${size} bytes exceeds the ${size - 1}-byte limit`);
  });

  test("encodeFrame() enforces the 16 MiB default bound", () => {
    expect(DEFAULT_MAX_FRAME_BYTES).toBe(16 * 1024 * 1024);
    expectCode(
      () => encodeFrame({ t: "result", id: 1, ok: true, value: "x".repeat(DEFAULT_MAX_FRAME_BYTES) }),
      "frame_too_large",
    );
  });

  test("decodeFrame() strips fields the schema does not name", () => {
    const body = packr.pack({ t: "cancel", id: 3, smuggled: { a: 1 } });
    expect(decodeFrame(body, BrokerFrame)).toStrictEqual({ t: "cancel", id: 3 });
  });

  test("a frame checked against the option its tag names answers exactly what the whole variant answers", () => {
    const tags = { satellite: tagIndex(SatelliteFrame), broker: tagIndex(BrokerFrame) };
    expect(tags.satellite.tags).toEqual(["hello", "cap", "result"]);
    expect(tags.broker.tags).toEqual(["call", "cap_result", "cancel"]);
    const verdict = (fn: () => unknown): unknown => {
      try {
        return { frame: fn() };
      } catch (err) {
        return { error: (err as ProtocolError).message };
      }
    };
    // Valid frames, and each spoiled one way: retagged (another option's tag, an unknown one, none),
    // a field dropped, a field given another value.
    const tag = fc.constantFrom<unknown>("hello", "cap", "result", "call", "cap_result", "cancel", "nope", 7, null);
    const spoil = fc.oneof(
      fc.constant(null),
      fc.record({ retag: tag }),
      fc.record({ drop: fc.nat() }),
      fc.record({ swap: fc.nat(), to: fc.jsonValue({ maxDepth: 2 }) }),
    );
    fc.assert(
      fc.property(anyFrame, spoil, ({ frame, schema }, how) => {
        const raw: Record<string, unknown> = { ...(frame as Record<string, unknown>) };
        const keys = Object.keys(raw);
        if (how !== null && "retag" in how) raw["t"] = how.retag;
        if (how !== null && "drop" in how) delete raw[keys[how.drop % keys.length]!];
        if (how !== null && "swap" in how) raw[keys[how.swap % keys.length]!] = how.to;
        const body = packr.pack(raw);
        const index = schema === SatelliteFrame ? tags.satellite : tags.broker;
        expect(verdict(() => decodeFrame(body, schema, index))).toEqual(verdict(() => decodeFrame(body, schema)));
      }),
      { numRuns: 2000 },
    );
  });

  test("decodeFrame() turns any bytes into a frame or a malformed_frame error, never another failure", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 96 }), (bytes) => {
        let decoded: unknown;
        try {
          decoded = decodeFrame(bytes, SatelliteFrame);
        } catch (err) {
          expect(err).toBeInstanceOf(ProtocolError);
          expect((err as ProtocolError).code).toBe("malformed_frame");
          return;
        }
        expect(v.is(SatelliteFrame, decoded)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  test("decodeFrame() calls bytes that are not msgpack malformed_frame", () => {
    // An empty body, and a fixmap that promises a key and stops short.
    for (const bytes of [new Uint8Array(0), new Uint8Array([0x81, 0xa1, 0x74])]) {
      const err = expectCode(() => decodeFrame(bytes, SatelliteFrame), "malformed_frame");
      expect(err.message).toMatch(/^Frame is not msgpack: /);
    }
  });

  test("decodeFrame() calls the never-used byte 0xc1 malformed_frame", () => {
    // msgpackr would decode 0xc1 to a sentinel object; the bounds scan refuses it first.
    const err = expectCode(() => decodeFrame(new Uint8Array([0xc1]), SatelliteFrame), "malformed_frame");
    expect(err.message).toBe("Frame is not msgpack: byte 0xc1 at offset 0 starts no msgpack value");
  });

  test("decodeFrame() calls a map followed by stray bytes malformed_frame", () => {
    const body = concat([packr.pack({ t: "cancel", id: 1 }), new Uint8Array([0x01])]);
    const err = expectCode(() => decodeFrame(body, BrokerFrame), "malformed_frame");
    expect(err.message).toMatch(/^Frame is not msgpack: /);
  });

  test.each([
    ["an array", [1, 2]],
    ["a number", 5],
    ["a string", "call"],
    ["nil", null],
    ["a boolean", true],
  ])("decodeFrame() calls msgpack that is %s, not a map, malformed_frame", (_what, value) => {
    const err = expectCode(() => decodeFrame(packr.pack(value), BrokerFrame), "malformed_frame");
    expect(err.message).toBe("Frame is not a msgpack map");
  });

  test("decodeFrame() names the frame and each failing field of a map that fails the schema", () => {
    const body = packr.pack({
      t: "call",
      id: -1,
      token: "k",
      kind: "tool",
      name: "n",
      args: "{}",
      strand: "",
      deadline_ms: 1.5,
    });
    const err = expectCode(() => decodeFrame(body, BrokerFrame), "malformed_frame");
    expect(err.message).toMatch(/^Bad 'call' frame: /);
    expect(err.message).toContain("at .id");
    expect(err.message).toContain("at .deadline_ms");
  });

  test("decodeFrame() names a nested field by its path", () => {
    const body = packr.pack({ t: "hello", boot: "b", runtime: "r", tools: ["ok", 7], hooks: [] });
    const err = expectCode(() => decodeFrame(body, SatelliteFrame), "malformed_frame");
    expect(err.message).toBe("Bad 'hello' frame: Invalid type: Expected string but received 7 at .tools.1");
  });

  test("decodeFrame() refuses a frame of the other direction, naming .t", () => {
    const err = expectCode(() => decodeFrame(packr.pack({ t: "cancel", id: 1 }), SatelliteFrame), "malformed_frame");
    expect(err.message).toMatch(/^Bad 'cancel' frame: .* at \.t$/);
  });

  // msgpackr renames every `__proto__` key to `__proto_` while decoding (its
  // prototype-pollution guard), so extension data travels as JSON text: capability
  // arguments and tools' JSON blocks keep a `__proto__` key exactly as sent.
  test("decodeFrame() keeps a __proto__ key of JSON data as it was sent", () => {
    const args = '{"__proto__":{"admin":true},"path":"/x"}';
    const frame: Cap = { t: "cap", id: 1, token: "k", cap: "kv.set", args };
    const decoded = decodeFrame(encodeFrame(frame).subarray(4), SatelliteFrame) as Cap;
    expect(decoded).toEqual(frame);
    const parsed = JSON.parse(decoded.args) as object;
    expect(Object.keys(parsed)).toEqual(["__proto__", "path"]);
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
  });

  // A malformed frame's message quotes what the peer sent, unbounded: a `t` of
  // 100 000 characters makes a 100 kB message, which becomes the satellite's death
  // reason and the `crashed` message a caller reads. `t` itself is already cut to
  // 32 characters in the prefix. See the report: BUG codec-unbounded-message.
  test("decodeFrame() keeps a malformed_frame message short whatever the peer sent", () => {
    const hostile = [
      { t: "x".repeat(100_000) },
      { t: "call", id: 1, token: "k", kind: "k".repeat(100_000), name: "n", args: "", strand: "", deadline_ms: 1 },
      { t: "hello", boot: "b", runtime: "r", tools: Array.from({ length: 1024 }, () => 7), hooks: [] },
    ];
    for (const frame of hostile) {
      const err = expectCode(
        () => decodeFrame(packr.pack(frame), frame.t === "call" ? BrokerFrame : SatelliteFrame),
        "malformed_frame",
      );
      expect(err.message.length).toBeLessThanOrEqual(2048);
    }
  });
});

describe("FrameReader", () => {
  const stream = fc.array(anyFrame, { minLength: 1, maxLength: 12 });
  const cuts = fc.array(fc.nat(), { maxLength: 40 });

  test("push() yields the same frames in order however the stream is split", () => {
    fc.assert(
      fc.property(stream, cuts, (frames, at) => {
        const pieces = splitAt(encodeStream(frames), at);
        const reader = new FrameReader();
        expect(
          readAll(
            reader,
            pieces,
            frames.map((f) => f.schema),
          ),
        ).toEqual(frames.map((f) => f.frame));
        expect(reader.buffered).toBe(0);
        expect(() => reader.end()).not.toThrow();
      }),
    );
  });

  test("push() handles a stream split at every byte", () => {
    fc.assert(
      fc.property(stream, (frames) => {
        const bytes = encodeStream(frames);
        const pieces = Array.from({ length: bytes.length }, (_, i) => bytes.subarray(i, i + 1));
        const reader = new FrameReader();
        expect(
          readAll(
            reader,
            pieces,
            frames.map((f) => f.schema),
          ),
        ).toEqual(frames.map((f) => f.frame));
        expect(reader.buffered).toBe(0);
      }),
      { numRuns: 40 },
    );
  });

  test("push() yields every frame of a stream coalesced into one chunk, in order, from one call", () => {
    fc.assert(
      fc.property(stream, (frames) => {
        const reader = new FrameReader();
        const bodies = reader.push(encodeStream(frames));
        expect(bodies).toHaveLength(frames.length);
        expect(bodies.map((body, i) => decodeFrame(body, frames[i]!.schema))).toEqual(frames.map((f) => f.frame));
        expect(reader.buffered).toBe(0);
      }),
    );
  });

  test("push() of an empty chunk changes nothing", () => {
    const reader = new FrameReader();
    const bytes = encodeFrame({ t: "cancel", id: 9 });
    expect(reader.push(bytes.subarray(0, 6))).toEqual([]);
    expect(reader.push(new Uint8Array(0))).toEqual([]);
    expect(reader.buffered).toBe(2);
    const [body] = reader.push(bytes.subarray(6));
    expect(decodeFrame(body!, BrokerFrame)).toEqual({ t: "cancel", id: 9 });
  });

  test("buffered counts the bytes held toward the next frame, header excluded once it is read", () => {
    fc.assert(
      fc.property(stream, cuts, (frames, at) => {
        const encoded = frames.map(({ frame }) => encodeFrame(frame));
        const starts: number[] = [];
        let total = 0;
        for (const bytes of encoded) {
          starts.push(total);
          total += bytes.length;
        }
        // The model: within the frame the stream position falls in, the 4 header
        // bytes are held until they are whole, then only body bytes are.
        const expected = (position: number): { frames: number; buffered: number } => {
          let k = starts.length - 1;
          while (k > 0 && starts[k]! > position) k--;
          const frameEnd = starts[k]! + encoded[k]!.length;
          if (position >= frameEnd) return { frames: k + 1, buffered: 0 };
          const offset = position - starts[k]!;
          return { frames: k, buffered: offset < 4 ? offset : offset - 4 };
        };
        const reader = new FrameReader();
        let position = 0;
        let seen = 0;
        for (const piece of splitAt(concat(encoded), at)) {
          seen += reader.push(piece).length;
          position += piece.length;
          const want = expected(position);
          expect({ frames: seen, buffered: reader.buffered }).toEqual(want);
        }
        expect(seen).toBe(frames.length);
      }),
    );
  });

  test("push() reads a header from a chunk that sits at an offset inside a larger buffer", () => {
    const bytes = encodeFrame({ t: "cancel", id: 77 });
    const backing = new Uint8Array(bytes.length + 40).fill(0xff);
    backing.set(bytes, 37);
    const reader = new FrameReader();
    const [body] = reader.push(backing.subarray(37, 37 + bytes.length));
    expect(decodeFrame(body!, BrokerFrame)).toEqual({ t: "cancel", id: 77 });
  });

  test("push() assembles a 1 MiB frame fed in 64-byte chunks in linear time, copying each byte once", () => {
    const payload = new Uint8Array(1024 * 1024 - 64);
    for (let i = 0; i < payload.length; i++) payload[i] = (i * 31 + 7) & 0xff;
    const frame = { t: "result", id: 5, ok: true, value: payload };
    const bytes = encodeFrame(frame);
    expect(bytes.length).toBeGreaterThan(1024 * 1024 - 64);

    // Count what the reader copies through Uint8Array#set while it assembles.
    const originalSet = Uint8Array.prototype.set;
    let copied = 0;
    Uint8Array.prototype.set = function (this: Uint8Array, source: ArrayLike<number>, offset?: number): void {
      copied += source.length;
      originalSet.call(this, source, offset);
    };
    const reader = new FrameReader();
    const bodies: Uint8Array[] = [];
    const wrongBuffered: string[] = [];
    try {
      for (let at = 0; at < bytes.length; at += 64) {
        bodies.push(...reader.push(bytes.subarray(at, at + 64)));
        const want = bodies.length === 0 ? Math.min(at + 64, bytes.length) - 4 : 0;
        if (reader.buffered !== want) wrongBuffered.push(`after ${at + 64} bytes: ${reader.buffered}, not ${want}`);
      }
    } finally {
      Uint8Array.prototype.set = originalSet;
    }

    expect(bodies).toHaveLength(1);
    expect(wrongBuffered.slice(0, 3)).toEqual([]);
    // Linear work: every byte is copied at most once (one copy per piece would be ~8 GiB of copying).
    expect(copied).toBeLessThanOrEqual(bytes.length);
    const decoded = decodeFrame(bodies[0]!, SatelliteFrame);
    expect(decoded).toMatchObject({ t: "result", id: 5, ok: true });
    // Byte-wise equality without jest's per-element walk (seconds on 1 MiB).
    const value = (decoded as { value: Uint8Array }).value;
    expect(value).toBeInstanceOf(Uint8Array);
    expect(Buffer.compare(Buffer.from(value.buffer, value.byteOffset, value.byteLength), Buffer.from(payload))).toBe(0);
  });

  test("a binary value is decoded as a copy: nothing decoded keeps the frame's bytes alive", () => {
    const bytes = encodeFrame({ t: "result", id: 3, ok: true, value: { blob: new Uint8Array(64).fill(7) } });
    const [body] = new FrameReader().push(bytes);
    const { value } = decodeFrame(body!, SatelliteFrame) as { value: { blob: Uint8Array } };
    expect([...value.blob]).toEqual(Array(64).fill(7));
    expect(value.blob.buffer).not.toBe(body!.buffer);
    expect(value.blob.buffer.byteLength).toBe(64);
  });

  test("a frame sent a byte at a time holds about its bytes, not an object per chunk", () => {
    // A satellite writing its channel a byte at a time is read a byte a chunk; kept as they came, each
    // chunk is an object (~100 bytes of heap), so a frame's byte bound would not bound the broker's memory.
    const bytes = encodeFrame({ t: "result", id: 5, ok: true, value: "x".repeat(1024 * 1024) });
    const reader = new FrameReader();
    const before = memoryInUse();
    let early = 0;
    for (let i = 0; i < bytes.length - 1; i++) early += reader.push(bytes.subarray(i, i + 1)).length;
    const held = memoryInUse() - before;
    expect(early).toBe(0);
    const [body] = reader.push(bytes.subarray(bytes.length - 1));
    expect(decodeFrame(body!, SatelliteFrame)).toMatchObject({ t: "result", id: 5, ok: true });
    // Twice its bytes at most while it grows by doubling; one object per byte would be ~100 times.
    expect(held).toBeLessThan(4 * bytes.length);
  });

  test("push() refuses a header over the maximum with frame_too_large and resets the reader", () => {
    const reader = new FrameReader(1024);
    const err = expectCode(() => reader.push(concat([header(1025), new Uint8Array(10)])), "frame_too_large");
    expect(err.message).toBe("Frame of 1025 bytes exceeds the 1024-byte limit");
    expect(reader.buffered).toBe(0);
    expect(() => reader.end()).not.toThrow();
    // Reset: the next frame is read from a clean slate.
    const [body] = reader.push(encodeFrame({ t: "cancel", id: 2 }));
    expect(decodeFrame(body!, BrokerFrame)).toEqual({ t: "cancel", id: 2 });
  });

  test("push() refuses an oversized header that arrives one byte at a time", () => {
    const reader = new FrameReader(1024);
    const bytes = header(0xffff_ffff);
    for (let i = 0; i < 3; i++) expect(reader.push(bytes.subarray(i, i + 1))).toEqual([]);
    expect(reader.buffered).toBe(3);
    expectCode(() => reader.push(bytes.subarray(3)), "frame_too_large");
    expect(reader.buffered).toBe(0);
  });

  test("push() accepts a frame exactly at the maximum", () => {
    const frame = { t: "cancel", id: 4 };
    const bytes = encodeFrame(frame);
    const reader = new FrameReader(bytes.length - 4);
    expect(reader.push(bytes)).toHaveLength(1);
  });

  test("push() refuses a header over the 16 MiB default before any body arrives", () => {
    const reader = new FrameReader();
    expectCode(() => reader.push(header(DEFAULT_MAX_FRAME_BYTES + 1)), "frame_too_large");
    expect(new FrameReader().push(header(DEFAULT_MAX_FRAME_BYTES))).toEqual([]);
  });

  test("push() hands a zero-length frame through as an empty body, which decodeFrame calls malformed", () => {
    const reader = new FrameReader();
    const bodies = reader.push(header(0));
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toHaveLength(0);
    expectCode(() => decodeFrame(bodies[0]!, BrokerFrame), "malformed_frame");
  });

  test.each([
    ["part of a header", 2, "(2 bytes held)"],
    ["a whole header and no body", 4, "(0 bytes held)"],
    ["a header and part of the body", 7, "(3 bytes held)"],
  ])("end() after %s throws truncated_frame and resets the reader", (_what, cut, held) => {
    const reader = new FrameReader();
    const bytes = encodeFrame({ t: "cancel", id: 12345 });
    expect(reader.push(bytes.subarray(0, cut))).toEqual([]);
    const err = expectCode(() => reader.end(), "truncated_frame");
    expect(err.message).toBe(`Stream ended inside a frame ${held}`);
    expect(reader.buffered).toBe(0);
    expect(() => reader.end()).not.toThrow();
  });

  test("end() after whole frames only is quiet", () => {
    const reader = new FrameReader();
    reader.push(concat([encodeFrame({ t: "cancel", id: 1 }), encodeFrame({ t: "cancel", id: 2 })]));
    expect(() => reader.end()).not.toThrow();
  });

  test("ProtocolError is an Error with a stable name and code", () => {
    const err = new ProtocolError("malformed_frame", "m");
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe("ProtocolError");
    expect(err.code).toBe("malformed_frame");
    expect(err.message).toBe("m");
  });
});

describe("FrameReader over a real Unix socket", () => {
  let dir: string;
  let path: string;
  let server: Server;
  let onConnection: ((socket: Socket) => void) | null = null;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tether-unit-"));
    path = join(dir, "wire.sock");
    server = createServer((socket) => {
      const handler = onConnection;
      onConnection = null;
      if (handler === null) socket.destroy();
      else handler(socket);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => resolve());
    });
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  /** Resolves with every frame the server side decodes from the next connection, once the client ends it. */
  function nextConnection(schemas: readonly v.GenericSchema[]): Promise<{ frames: unknown[]; chunks: number }> {
    return new Promise((resolve, reject) => {
      onConnection = (socket) => {
        const reader = new FrameReader();
        const frames: unknown[] = [];
        let chunks = 0;
        socket.on("data", (chunk: Buffer) => {
          chunks++;
          try {
            frames.push(...readAll(reader, [chunk], schemas.slice(frames.length)));
          } catch (err) {
            socket.destroy();
            reject(err as Error);
          }
        });
        socket.on("end", () => {
          try {
            reader.end();
            resolve({ frames, chunks });
          } catch (err) {
            reject(err as Error);
          }
          socket.end();
        });
        socket.on("error", reject);
      };
    });
  }

  const pause = fc.constantFrom("none", "immediate", "timeout");

  test("the server's reader recovers every frame a client writes in randomly split, delayed writes", async () => {
    let sawSplitDelivery = false;
    await fc.assert(
      fc.asyncProperty(
        fc.array(anyFrame, { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 24 }),
        fc.array(pause, { minLength: 1, maxLength: 24 }),
        async (frames: Directed[], at: number[], pauses: string[]) => {
          const received = nextConnection(frames.map((f) => f.schema));
          const client = createConnection(path);
          try {
            await new Promise<void>((resolve, reject) => {
              client.once("connect", resolve);
              client.once("error", reject);
            });
            const pieces = splitAt(encodeStream(frames), at);
            for (const [i, piece] of pieces.entries()) {
              await new Promise<void>((resolve, reject) =>
                client.write(piece, (err) => (err ? reject(err) : resolve())),
              );
              const p = pauses[i % pauses.length];
              if (p === "immediate") await new Promise<void>((resolve) => setImmediate(resolve));
              else if (p === "timeout") await new Promise<void>((resolve) => setTimeout(resolve, 1));
            }
            client.end();
            const { frames: got, chunks } = await received;
            if (chunks > 1) sawSplitDelivery = true;
            expect(got).toEqual(frames.map((f) => f.frame));
          } finally {
            client.destroy();
          }
        },
      ),
      { numRuns: 30 },
    );
    // The property is only worth something if the server really saw split reads.
    expect(sawSplitDelivery).toBe(true);
  });
});
