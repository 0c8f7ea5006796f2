/**
 * Bounds on every document a peer sends, checked by a cheap linear scan
 * *before* any decoder allocates: nesting depth, element count, and (for
 * msgpack) lengths that the bytes left could not hold. A decoder trusts a
 * declared length (msgpackr allocates an array of it at every level before it
 * finds the data missing: 72 KB of nested headers took 1.5 GB) and a parsed
 * document can be deeper than anything that later walks it (JSON.stringify
 * overflows the stack at 100,000 levels). The scan walks the bytes once with a
 * fixed amount of state per level and throws `DocumentBoundsError` naming the
 * bound it crossed.
 *
 * Plain TS with no runtime-specific imports: shared by the broker and the
 * satellite runtime.
 */

export interface DocumentBounds {
  /** Arrays and maps (objects) inside one another. */
  readonly maxDepth: number;
  /** Values in the whole document: scalars, arrays, maps, map keys. */
  readonly maxElements: number;
}

/** Frames (the wire): a frame is a small map; extension data travels inside it as JSON text. */
export const FRAME_BOUNDS: DocumentBounds = { maxDepth: 32, maxElements: 16_384 };

/** JSON text from an extension: JSON blocks in answers, event answers, capability arguments. */
export const JSON_BOUNDS: DocumentBounds = { maxDepth: 128, maxElements: 100_000 };

/**
 * JSON text from a caller: tool arguments (written by a model) and `tether serve` messages.
 * Tighter, because callers reach the broker's thread at their own rate: parsing 16,384
 * elements takes a few milliseconds, 100,000 ten times that.
 */
export const CALLER_JSON_BOUNDS: DocumentBounds = { maxDepth: 64, maxElements: 16_384 };

export class DocumentBoundsError extends Error {
  override readonly name = "DocumentBoundsError";
  constructor(
    readonly bound: "depth" | "elements" | "length",
    message: string,
  ) {
    super(message);
  }
}

function tooDeep(bounds: DocumentBounds): never {
  throw new DocumentBoundsError("depth", `nested deeper than ${bounds.maxDepth} levels`);
}

function tooMany(bounds: DocumentBounds): never {
  throw new DocumentBoundsError("elements", `more than ${bounds.maxElements} elements`);
}

/**
 * Scans one msgpack value filling `bytes` exactly. Throws `DocumentBoundsError` past a bound,
 * or when a declared length exceeds what is left (the decoder would reject it anyway, after
 * allocating for it).
 */
export function scanMsgpack(bytes: Uint8Array, bounds: DocumentBounds = FRAME_BOUNDS): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;
  // Values still owed by each open array or map (a map owes two per entry).
  const owed: number[] = [];
  // Their sum: the fewest bytes still to come (each value takes one at least).
  let owedTotal = 0;
  let at = 0;
  let elements = 0;
  const need = (n: number) => {
    if (at + n > end)
      throw new DocumentBoundsError(
        "length",
        `a length of ${n} bytes at offset ${at} runs past the end (${end - at} left)`,
      );
  };
  let opened = false;
  const open = (children: number) => {
    // Every child takes at least one byte: a count the rest of the bytes cannot hold is a lie.
    if (children > end - at)
      throw new DocumentBoundsError(
        "length",
        `a container of ${children} elements at offset ${at} cannot fit in the ${end - at} bytes left`,
      );
    if (children === 0) return;
    if (owed.length >= bounds.maxDepth) tooDeep(bounds);
    owed.push(children);
    owedTotal += children;
    // Each open level's count includes the child being read now, which has begun.
    if (owedTotal - (owed.length - 1) > end - at) {
      throw new DocumentBoundsError(
        "length",
        `a container of ${children} elements at offset ${at} cannot fit in the ${end - at} bytes left beside ` +
          `what encloses it`,
      );
    }
    opened = true;
  };
  do {
    opened = false;
    need(1);
    const b = bytes[at++]!;
    if (++elements > bounds.maxElements) tooMany(bounds);
    if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) {
      // fixint, negative fixint, nil, false, true
    } else if (b >= 0xa0 && b <= 0xbf) {
      need(b & 0x1f);
      at += b & 0x1f;
    } else if (b >= 0x90 && b <= 0x9f) {
      open(b & 0x0f);
    } else if (b >= 0x80 && b <= 0x8f) {
      open((b & 0x0f) * 2);
    } else {
      switch (b) {
        case 0xcc:
        case 0xd0:
          need(1);
          at += 1;
          break; // uint8, int8
        case 0xcd:
        case 0xd1:
          need(2);
          at += 2;
          break;
        case 0xca:
        case 0xce:
        case 0xd2:
          need(4);
          at += 4;
          break;
        case 0xcb:
        case 0xcf:
        case 0xd3:
          need(8);
          at += 8;
          break;
        case 0xd4:
          need(2);
          at += 2;
          break; // fixext 1
        case 0xd5:
          need(3);
          at += 3;
          break;
        case 0xd6:
          need(5);
          at += 5;
          break;
        case 0xd7:
          need(9);
          at += 9;
          break;
        case 0xd8:
          need(17);
          at += 17;
          break;
        case 0xc4:
        case 0xd9: {
          need(1);
          const n = view.getUint8(at);
          at += 1;
          need(n);
          at += n;
          break;
        } // bin8, str8
        case 0xc5:
        case 0xda: {
          need(2);
          const n = view.getUint16(at);
          at += 2;
          need(n);
          at += n;
          break;
        }
        case 0xc6:
        case 0xdb: {
          need(4);
          const n = view.getUint32(at);
          at += 4;
          need(n);
          at += n;
          break;
        }
        case 0xc7: {
          need(2);
          const n = view.getUint8(at);
          at += 2;
          need(n);
          at += n;
          break;
        } // ext8: length, type, data
        case 0xc8: {
          need(3);
          const n = view.getUint16(at);
          at += 3;
          need(n);
          at += n;
          break;
        }
        case 0xc9: {
          need(5);
          const n = view.getUint32(at);
          at += 5;
          need(n);
          at += n;
          break;
        }
        case 0xdc: {
          need(2);
          const n = view.getUint16(at);
          at += 2;
          open(n);
          break;
        }
        case 0xdd: {
          need(4);
          const n = view.getUint32(at);
          at += 4;
          open(n);
          break;
        }
        case 0xde: {
          need(2);
          const n = view.getUint16(at);
          at += 2;
          open(n * 2);
          break;
        }
        case 0xdf: {
          need(4);
          const n = view.getUint32(at);
          at += 4;
          open(n * 2);
          break;
        }
        default:
          throw new DocumentBoundsError(
            "length",
            `byte 0x${b.toString(16)} at offset ${at - 1} starts no msgpack value`,
          );
      }
    }
    // A value that opened no container is done: settle the containers it completes.
    while (!opened && owed.length > 0) {
      const top = owed.length - 1;
      owedTotal--;
      if (--owed[top]! > 0) break;
      owed.pop();
    }
  } while (owed.length > 0);
  if (at !== end) throw new DocumentBoundsError("length", `${end - at} bytes follow the value`);
}

/**
 * Where the string opened at `open` closes: the next quote after an even run
 * of backslashes (an odd run escapes it), or the end of the text. Found with
 * indexOf, not a character at a time: a 64 KiB argument took the broker
 * ~170 µs to scan the slow way.
 */
function closingQuote(text: string, open: number): number {
  let at = open;
  for (;;) {
    const quote = text.indexOf('"', at + 1);
    if (quote < 0) return text.length;
    let before = quote - 1;
    while (before > open && text.charCodeAt(before) === 0x5c) before--;
    if ((quote - 1 - before) % 2 === 0) return quote;
    at = quote;
  }
}

/**
 * Scans JSON text for depth and element count (it does not validate the grammar:
 * JSON.parse does, after). Strings are skipped with their escapes.
 */
export function scanJson(text: string, bounds: DocumentBounds = JSON_BOUNDS): void {
  let depth = 0;
  let elements = 0;
  // A value starts at the beginning, after `[`, `{`, `,` or `:`; counting those is enough.
  let expectingValue = true;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      if (expectingValue && ++elements > bounds.maxElements) tooMany(bounds);
      expectingValue = false;
      i = closingQuote(text, i);
    } else if (c === 0x5b || c === 0x7b) {
      if (++elements > bounds.maxElements) tooMany(bounds);
      if (++depth > bounds.maxDepth) tooDeep(bounds);
      expectingValue = true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
      expectingValue = false;
    } else if (c === 0x2c || c === 0x3a) {
      expectingValue = true;
    } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      // white space
    } else if (expectingValue) {
      // a number, true, false or null
      if (++elements > bounds.maxElements) tooMany(bounds);
      expectingValue = false;
    }
  }
}

/** JSON.parse with the bounds checked first. */
export function parseBoundedJson(text: string, bounds: DocumentBounds = JSON_BOUNDS): unknown {
  scanJson(text, bounds);
  return JSON.parse(text) as unknown;
}
