/**
 * The document bounds scan: every value within the bounds passes exactly as
 * the decoder reads it; every bomb (too deep, too many elements, a declared
 * length the bytes cannot hold) is refused before the decoder runs, naming
 * the bound.
 */
import fc from "fast-check";
import { Packr, Unpackr } from "msgpackr";
import {
  DocumentBoundsError,
  FRAME_BOUNDS,
  JSON_BOUNDS,
  parseBoundedJson,
  scanJson,
  scanMsgpack,
} from "../../jail-runtime/wire/document-bounds.js";

const packr = new Packr({ useRecords: false, moreTypes: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" });

const value = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.string(),
    fc.integer(),
    fc.double({ noNaN: true }),
    fc.boolean(),
    fc.constant(null),
    fc.uint8Array({ maxLength: 300 }),
    tie("array"),
    tie("object"),
  ),
  array: fc.array(tie("value"), { maxLength: 5 }),
  object: fc.dictionary(fc.string({ maxLength: 8 }), tie("value"), { maxKeys: 5 }),
})).value;

test("every msgpack value msgpackr writes scans, and decodes the same", () => {
  fc.assert(
    fc.property(value, (v) => {
      const bytes = packr.pack(v);
      scanMsgpack(bytes, { maxDepth: 1000, maxElements: 1e9 });
      unpackr.unpack(bytes);
    }),
    { numRuns: 500 },
  );
});

test("every JSON text JSON.stringify writes scans", () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const text = JSON.stringify(v);
      expect(parseBoundedJson(text, { maxDepth: 1000, maxElements: 1e9 })).toEqual(JSON.parse(text));
    }),
    { numRuns: 500 },
  );
});

function refused(run: () => void, bound: DocumentBoundsError["bound"]): string {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(DocumentBoundsError);
    expect((err as DocumentBoundsError).bound).toBe(bound);
    return (err as Error).message;
  }
  throw new Error("not refused");
}

describe("msgpack bombs", () => {
  test("nested array16 headers claiming 65,535 elements each (72 KB, 1.5 GB in msgpackr 1.11) are refused at the second header", () => {
    const bytes = new Uint8Array(72_000);
    for (let i = 0; i < bytes.length; i += 3) bytes.set([0xdc, 0xff, 0xff], i);
    expect(refused(() => scanMsgpack(bytes), "length")).toMatch(/container of 65535 elements at offset 6 cannot fit/);
  });

  test.each([
    ["fixarray", (d: number) => new Uint8Array([...Array(d).fill(0x91), 0xc0])],
    ["fixmap", (d: number) => new Uint8Array([...Array.from({ length: d }, () => [0x81, 0xa1, 0x6b]).flat(), 0xc0])],
    ["array32", (d: number) => new Uint8Array([...Array.from({ length: d }, () => [0xdd, 0, 0, 0, 1]).flat(), 0xc0])],
  ])("%s nested one deeper than the bound is refused; at the bound it passes", (_name, nest) => {
    scanMsgpack(nest(FRAME_BOUNDS.maxDepth));
    expect(refused(() => scanMsgpack(nest(FRAME_BOUNDS.maxDepth + 1)), "depth")).toBe(
      `nested deeper than ${FRAME_BOUNDS.maxDepth} levels`,
    );
  });

  test("a map of 2.3 million keys (15.6 MB, under the frame limit) is refused after the element bound, not decoded", () => {
    const map: Record<string, number> = {};
    for (let i = 0; i < FRAME_BOUNDS.maxElements; i++) map[`k${i}`] = 0;
    expect(refused(() => scanMsgpack(packr.pack(map)), "elements")).toBe(
      `more than ${FRAME_BOUNDS.maxElements} elements`,
    );
  });

  test.each([
    ["str32 claiming 4 GB", [0xdb, 0xff, 0xff, 0xff, 0xff, 0x61]],
    ["bin16 past the end", [0xc5, 0x01, 0x00, 0x00]],
    ["ext32 past the end", [0xc9, 0x00, 0x01, 0x00, 0x00, 0x01]],
    ["map32 claiming 2^32-1 entries", [0xdf, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0]],
    ["a truncated float64", [0xcb, 0, 0]],
    ["trailing bytes", [0xc0, 0xc0]],
    ["the reserved byte", [0xc1]],
  ])("%s is refused", (_name, bytes) => {
    refused(() => scanMsgpack(new Uint8Array(bytes)), "length");
  });
});

describe("JSON bombs", () => {
  test.each([
    ["arrays", (d: number) => "[".repeat(d) + "]".repeat(d)],
    ["objects", (d: number) => `${'{"a":'.repeat(d)}0${"}".repeat(d)}`],
  ])("%s nested one deeper than the bound are refused; at the bound they pass", (_name, nest) => {
    scanJson(nest(JSON_BOUNDS.maxDepth));
    expect(refused(() => scanJson(nest(JSON_BOUNDS.maxDepth + 1)), "depth")).toBe(
      `nested deeper than ${JSON_BOUNDS.maxDepth} levels`,
    );
  });

  test("100,000 levels (JSON.stringify overflows the stack on it) are refused without recursion", () => {
    refused(() => scanJson("[".repeat(100_000) + "]".repeat(100_000)), "depth");
  });

  test("an object of 400,000 keys is refused after the element bound", () => {
    const text = `{${Array.from({ length: 400_000 }, (_, i) => `"k${i}":0`).join(",")}}`;
    refused(() => scanJson(text), "elements");
  });

  test("strings are skipped exactly as a character-at-a-time scan skips them, escapes and all, in JSON or not", () => {
    // The scan before strings were skipped with indexOf: what it counted, every text must still count.
    const reference = (text: string): { elements: number; depth: number } => {
      let depth = 0;
      let deepest = 0;
      let elements = 0;
      let expectingValue = true;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 0x22) {
          if (expectingValue) elements++;
          expectingValue = false;
          for (i++; i < text.length; i++) {
            const d = text.charCodeAt(i);
            if (d === 0x5c) i++;
            else if (d === 0x22) break;
          }
        } else if (c === 0x5b || c === 0x7b) {
          elements++;
          deepest = Math.max(deepest, ++depth);
          expectingValue = true;
        } else if (c === 0x5d || c === 0x7d) {
          depth--;
          expectingValue = false;
        } else if (c === 0x2c || c === 0x3a) expectingValue = true;
        else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
          // white space
        } else if (expectingValue) {
          elements++;
          expectingValue = false;
        }
      }
      return { elements, depth: deepest };
    };
    const tricky = fc.string({
      unit: fc.constantFrom('"', "\\", "[", "{", "]", "}", ",", ":", "a", "1", " "),
      maxLength: 40,
    });
    const texts = fc.oneof(
      tricky,
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.array(tricky, { maxLength: 5 }).map((parts) => JSON.stringify({ [parts.join("")]: parts })),
    );
    fc.assert(
      fc.property(texts, (text) => {
        const { elements, depth } = reference(text);
        scanJson(text, { maxDepth: depth, maxElements: elements });
        if (elements > 0) refused(() => scanJson(text, { maxDepth: depth, maxElements: elements - 1 }), "elements");
        if (depth > 0) refused(() => scanJson(text, { maxDepth: depth - 1, maxElements: elements }), "depth");
      }),
      { numRuns: 2000 },
    );
  });

  test("brackets and quotes inside strings do not count", () => {
    scanJson(JSON.stringify({ a: `[[[[{{{{\\"]]]${"[".repeat(10_000)}` }), { maxDepth: 2, maxElements: 10 });
  });
});
