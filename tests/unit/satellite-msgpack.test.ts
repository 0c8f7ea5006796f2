/**
 * The satellite's own msgpack and framing (jail-runtime/cap/msgpack.ts,
 * framing.ts: written on captured built-ins so extension code cannot patch
 * them) against the broker's, msgpackr through jail-runtime/wire/codec.ts: the
 * broker reads what the satellite writes as if msgpackr had written it, and
 * the satellite reads what the broker writes.
 */
import fc from "fast-check";
import { Packr, Unpackr } from "msgpackr";
import {
  decodeBrokerFrame,
  encodeFrame as satelliteEncodeFrame,
  FrameSplitter,
} from "../../jail-runtime/cap/framing.js";
import { Writer, decodeValue, encodeValue } from "../../jail-runtime/cap/msgpack.js";
import {
  DEFAULT_MAX_FRAME_BYTES,
  FrameReader,
  ProtocolError,
  decodeFrame,
  encodeFrame,
} from "../../jail-runtime/wire/codec.js";
import { BrokerFrame, SatelliteFrame } from "../../jail-runtime/wire/frames.js";
import { brokerFrame, concat, satelliteFrame, splitAt } from "./support/arbitraries.js";

// The broker's options (jail-runtime/wire/codec.ts).
const packr = new Packr({ useRecords: false, moreTypes: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });

function satellitePack(value: unknown): Uint8Array {
  const out = new Writer();
  encodeValue(out, value);
  return out.bytes();
}

/** Values as frames carry them; no `__proto__` keys (msgpackr renames them) and no -0 (one integer zero). */
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.constant(undefined),
    fc.boolean(),
    fc.integer(),
    fc.maxSafeInteger(),
    fc.double().map((d) => (Object.is(d, -0) ? 0 : d)),
    fc.string({ unit: "binary", maxLength: 80 }),
    fc.string({ maxLength: 300 }),
    fc.uint8Array({ maxLength: 300 }),
    fc.array(tie("v"), { maxLength: 20 }),
    fc.dictionary(
      fc.string({ maxLength: 8 }).filter((k) => k !== "__proto__"),
      tie("v"),
      { maxKeys: 20, noNullPrototype: true },
    ),
  ),
})).v;

describe("the satellite's msgpack", () => {
  test("msgpackr reads what it writes as it reads msgpackr's own encoding", () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(unpackr.unpack(satellitePack(v))).toEqual(unpackr.unpack(packr.pack(v)));
      }),
      { numRuns: 400 },
    );
  });

  test("it reads what msgpackr writes", () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(decodeValue(packr.pack(v))).toEqual(unpackr.unpack(packr.pack(v)));
      }),
      { numRuns: 400 },
    );
  });

  test("lengths at every head boundary (fix, 8, 16 and 32 bit) agree with msgpackr", () => {
    for (const n of [0, 15, 16, 31, 32, 255, 256, 65535, 65536]) {
      for (const v of [
        "a".repeat(n),
        new Uint8Array(n).fill(7),
        Array.from({ length: n }, () => 1),
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])),
      ]) {
        expect(unpackr.unpack(satellitePack(v))).toEqual(v);
        // msgpackr itself writes at most 65535 keys in a map (its default); the broker never sends more.
        if (typeof v !== "object" || v instanceof Uint8Array || Array.isArray(v) || n < 65536)
          expect(decodeValue(packr.pack(v))).toEqual(v);
      }
    }
    for (const n of [
      127,
      128,
      255,
      256,
      65535,
      65536,
      2 ** 32 - 1,
      2 ** 32,
      Number.MAX_SAFE_INTEGER,
      -32,
      -33,
      -128,
      -129,
      -32768,
      -32769,
      -(2 ** 31),
      -(2 ** 31) - 1,
      0.5,
      NaN,
      Infinity,
    ]) {
      expect(unpackr.unpack(satellitePack(n))).toEqual(n);
      expect(decodeValue(packr.pack(n))).toEqual(n);
    }
  });

  test("strings that are not all ASCII, at every length boundary, through one reused writer", () => {
    const out = new Writer();
    for (const n of [1, 15, 16, 17, 31, 32, 33, 85, 86, 255, 256, 21845, 21846, 65535, 65536]) {
      for (const text of [
        "é".repeat(n),
        `${"a".repeat(n - 1)}😀`,
        `😀${"a".repeat(n)}`,
        `${"a".repeat(n)}\u{10FFFF}`,
        "\uD800".repeat(Math.min(n, 300)),
      ]) {
        out.reset();
        encodeValue(out, { text, n });
        const back = unpackr.unpack(out.bytes()) as { text: string; n: number };
        // A lone surrogate cannot be UTF-8: it travels as U+FFFD, as TextEncoder writes it.
        expect(back).toEqual({
          text: text.replace(/[\uD800-\uDFFF]/g, (c, i: number, all: string) =>
            /[\uD800-\uDBFF][\uDC00-\uDFFF]/.test(all.slice(i - 1, i + 1)) ||
            /[\uD800-\uDBFF][\uDC00-\uDFFF]/.test(all.slice(i, i + 2))
              ? c
              : "\uFFFD",
          ),
          n,
        });
        expect(decodeValue(out.bytes())).toEqual(back);
      }
    }
  });

  test("a `__proto__` key stays an own key; it never becomes the prototype", () => {
    const decoded = decodeValue(packr.pack(JSON.parse('{"__proto__":{"polluted":true},"a":1}'))) as Record<
      string,
      unknown
    >;
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(Object.keys(decoded)).toEqual(["__proto__", "a"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test("a setter or a read-only property an extension put on Object.prototype never sees or stops a decoded key", () => {
    const caught: string[] = [];
    const names = ["t", "id", "token", "args", "0", "toString", "constructor"];
    const sent = { t: "call", id: 7, token: "x".repeat(32), args: "{}", "0": "zero", toString: "s", constructor: 1 };
    const saved = names.map((name) => [name, Object.getOwnPropertyDescriptor(Object.prototype, name)] as const);
    let decoded: Record<string, unknown>;
    let error: unknown = null;
    try {
      for (const [i, name] of names.entries()) {
        // Half of them setters, half read-only: assigning to either would be caught or fail.
        Object.defineProperty(
          Object.prototype,
          name,
          i % 2 === 0
            ? { configurable: true, set: (v: unknown) => caught.push(`${name}=${typeof v}`), get: () => "patched" }
            : { configurable: true, writable: false, value: "patched" },
        );
      }
      decoded = decodeValue(packr.pack(sent)) as Record<string, unknown>;
    } catch (err) {
      error = err;
    } finally {
      // Restored before anything is checked: the test runner itself needs toString and constructor.
      for (const [name, descriptor] of saved) {
        delete (Object.prototype as Record<string, unknown>)[name];
        if (descriptor !== undefined) Object.defineProperty(Object.prototype, name, descriptor);
      }
    }
    expect(error).toBeNull();
    expect(caught).toEqual([]);
    for (const name of names)
      expect(Object.getOwnPropertyDescriptor(decoded!, name)).toMatchObject({
        value: sent[name as keyof typeof sent],
        enumerable: true,
        writable: true,
      });
    expect(Object.keys(decoded!)).toEqual(Object.keys(sent));
  });

  test("bytes that are not one msgpack value are refused", () => {
    expect(() => decodeValue(new Uint8Array([0xc1]))).toThrow("msgpack type 0xc1 is not part of the frames");
    expect(() => decodeValue(new Uint8Array([0x92, 0x01]))).toThrow("unexpected end of msgpack data");
    expect(() => decodeValue(new Uint8Array([0x01, 0x02]))).toThrow("trailing bytes after the msgpack value");
    expect(() => decodeValue(new Uint8Array([0xd4, 0x05, 0x00]))).toThrow(
      "msgpack extension type 5 is not part of the frames",
    );
  });
});

describe("the satellite's framing", () => {
  test("the broker decodes every satellite frame the satellite encodes, however the stream is cut", () => {
    fc.assert(
      fc.property(
        fc.array(satelliteFrame, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (frames, cuts) => {
          const reader = new FrameReader();
          const bodies = splitAt(concat(frames.map((f) => satelliteEncodeFrame(f))), cuts).flatMap((piece) =>
            reader.push(piece),
          );
          reader.end();
          expect(bodies.map((b) => decodeFrame(b, SatelliteFrame))).toEqual(
            frames.map((f) => decodeFrame(encodeFrame(f).subarray(4), SatelliteFrame)),
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  test("the satellite decodes every broker frame the broker encodes, however the stream is cut", () => {
    fc.assert(
      fc.property(
        fc.array(brokerFrame, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (frames, cuts) => {
          const splitter = new FrameSplitter();
          const got: unknown[] = [];
          for (const piece of splitAt(concat(frames.map((f) => encodeFrame(f))), cuts))
            splitter.push(piece.slice(), (body) => got.push(decodeBrokerFrame(body)));
          expect(got).toEqual(frames.map((f) => decodeFrame(encodeFrame(f).subarray(4), BrokerFrame)));
        },
      ),
      { numRuns: 200 },
    );
  });

  test("a frame over the limit is refused with the broker's code and message, on both ends", () => {
    const big = { t: "result", id: 1, ok: true, value: "x".repeat(DEFAULT_MAX_FRAME_BYTES) };
    const thrown = (fn: () => unknown): unknown => {
      try {
        fn();
      } catch (e) {
        return e;
      }
      throw new Error("nothing was thrown");
    };
    const ours = thrown(() => satelliteEncodeFrame(big));
    expect(ours).toBeInstanceOf(ProtocolError);
    expect((ours as ProtocolError).code).toBe("frame_too_large");
    // msgpackr spends two bytes more on a long string's head; the wording is the same.
    expect((ours as ProtocolError).message).toBe(
      `Frame of ${satellitePack(big).length} bytes exceeds the ${DEFAULT_MAX_FRAME_BYTES}-byte limit`,
    );
    expect((thrown(() => encodeFrame(big)) as ProtocolError).message).toMatch(
      new RegExp(`^Frame of \\d+ bytes exceeds the ${DEFAULT_MAX_FRAME_BYTES}-byte limit$`),
    );
    const header = new Uint8Array(4);
    new DataView(header.buffer).setUint32(0, DEFAULT_MAX_FRAME_BYTES + 1, false);
    expect(() => new FrameSplitter().push(header, () => {})).toThrow(
      new ProtocolError(
        "frame_too_large",
        `Frame of ${DEFAULT_MAX_FRAME_BYTES + 1} bytes exceeds the ${DEFAULT_MAX_FRAME_BYTES}-byte limit`,
      ),
    );
  });

  test("a broker frame that is not a map, or fails its schema, is malformed", () => {
    expect(() => decodeBrokerFrame(packr.pack([1, 2]))).toThrow("Frame is not a msgpack map");
    expect(() => decodeBrokerFrame(packr.pack({ t: "call", id: 1 }))).toThrow(/^Bad 'call' frame: /);
    expect(() => decodeBrokerFrame(new Uint8Array([0xc1]))).toThrow(/^Frame is not msgpack: /);
  });
});
