/**
 * The satellite's msgpack: the subset the frames use (nil, booleans, integers,
 * float64, strings, binary, arrays, maps with string keys, and msgpackr's
 * `undefined`), written against the built-ins captured in `intrinsics.ts`, so
 * an extension that patches prototypes or globals cannot change what the
 * runtime writes or reads. The broker decodes and encodes with msgpackr
 * (`jail-runtime/wire/codec.ts`); `tests/unit/satellite-msgpack.test.ts` checks
 * the two agree.
 */
import {
  DV,
  SafeError,
  SafeNumber,
  U8,
  arrayIsArray,
  dvGetBigInt64,
  dvGetBigUint64,
  dvGetFloat32,
  dvGetFloat64,
  dvGetInt16,
  dvGetInt32,
  dvGetInt8,
  dvGetUint16,
  dvGetUint32,
  dvGetUint8,
  numberIsInteger,
  ObjectPrototype,
  objectDefineProperty,
  objectKeys,
  u8Buffer,
  u8ByteOffset,
  u8Length,
  u8Slice,
  u8Subarray,
  stringFromCharCode,
  utf8Decode,
} from "./intrinsics.js";
import { Writer } from "./msgpack-writer.js";

// ---------------------------------------------------------------- encoding

export { Writer };

/** A length-carrying head: the fix form below `fixLimit`, else the 8-, 16- or 32-bit form. */
function head(
  out: Writer,
  n: number,
  fix: number,
  fixLimit: number,
  code8: number,
  code16: number,
  code32: number,
): void {
  if (n < fixLimit) out.byte(fix | n);
  else if (code8 !== 0 && n < 0x100) {
    out.byte(code8);
    out.byte(n);
  } else if (n < 0x10000) {
    out.byte(code16);
    out.u16(n);
  } else {
    out.byte(code32);
    out.u32(n);
  }
}

function number(out: Writer, value: number): void {
  if (numberIsInteger(value) && value >= -0x80000000 && value < 0x100000000) {
    if (value >= 0) {
      if (value < 0x80) out.byte(value);
      else if (value < 0x100) {
        out.byte(0xcc);
        out.byte(value);
      } else if (value < 0x10000) {
        out.byte(0xcd);
        out.u16(value);
      } else {
        out.byte(0xce);
        out.u32(value);
      }
    } else if (value >= -32) {
      out.byte(value & 0xff);
    } else if (value >= -0x80) {
      out.byte(0xd0);
      out.i8(value);
    } else if (value >= -0x8000) {
      out.byte(0xd1);
      out.i16(value);
    } else {
      out.byte(0xd2);
      out.i32(value);
    }
    return;
  }
  // Everything else (fractions, large integers, NaN, ±Infinity) as float64, which holds every safe integer exactly.
  out.byte(0xcb);
  out.f64(value);
}

/** Appends the msgpack form of `value`. Objects are written as maps of their own enumerable string keys. */
export function encodeValue(out: Writer, value: unknown): void {
  switch (typeof value) {
    case "undefined":
      // msgpackr's form (fixext 1, type 0): the broker reads `undefined` back.
      out.byte(0xd4);
      out.byte(0);
      out.byte(0);
      return;
    case "boolean":
      out.byte(value ? 0xc3 : 0xc2);
      return;
    case "number":
      number(out, value);
      return;
    case "string":
      out.str(value);
      return;
    case "object":
      break;
    case "function":
    case "symbol":
      out.byte(0xc0);
      return;
    default:
      throw new SafeError(`Cannot encode a ${typeof value}`);
  }
  if (value === null) {
    out.byte(0xc0);
  } else if (value instanceof U8) {
    head(out, u8Length(value), 0, 0, 0xc4, 0xc5, 0xc6);
    out.raw(value);
  } else if (arrayIsArray(value)) {
    const items = value as readonly unknown[];
    const n = items.length;
    head(out, n, 0x90, 16, 0, 0xdc, 0xdd);
    for (let i = 0; i < n; i++) encodeValue(out, items[i]);
  } else {
    const record = value as Record<string, unknown>;
    const keys = objectKeys(record);
    const n = keys.length;
    head(out, n, 0x80, 16, 0, 0xde, 0xdf);
    for (let i = 0; i < n; i++) {
      const key = keys[i]!;
      encodeValue(out, key);
      encodeValue(out, record[key]);
    }
  }
}

// ---------------------------------------------------------------- decoding

class Reader {
  #at = 0;
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #end: number;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
    this.#end = u8Length(bytes);
    this.#view = new DV(u8Buffer(bytes), u8ByteOffset(bytes), this.#end);
  }

  get done(): boolean {
    return this.#at === this.#end;
  }

  #take(n: number): number {
    if (this.#at + n > this.#end) throw new SafeError("unexpected end of msgpack data");
    const at = this.#at;
    this.#at += n;
    return at;
  }

  #uint(n: 1 | 2 | 4): number {
    const at = this.#take(n);
    return n === 1
      ? dvGetUint8(this.#view, at)
      : n === 2
        ? dvGetUint16(this.#view, at, false)
        : dvGetUint32(this.#view, at, false);
  }

  #str(n: number): string {
    const at = this.#take(n);
    if (n <= 16) {
      // Short ASCII (keys, codes, names) without a decoder call.
      let text = "";
      let i = 0;
      for (; i < n; i++) {
        const c = this.#bytes[at + i]!;
        if (c >= 0x80) break;
        text += stringFromCharCode(c);
      }
      if (i === n) return text;
    }
    return utf8Decode(u8Subarray(this.#bytes, at, at + n));
  }

  #bin(n: number): Uint8Array {
    const at = this.#take(n);
    return u8Slice(this.#bytes, at, at + n);
  }

  #array(n: number): unknown[] {
    const out: unknown[] = [];
    // Own data properties, defined rather than assigned: a setter on Array.prototype is not called.
    for (let i = 0; i < n; i++)
      objectDefineProperty(out, i, { value: this.read(), enumerable: true, writable: true, configurable: true });
    return out;
  }

  #map(n: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const key = this.read();
      if (typeof key !== "string" && typeof key !== "number")
        throw new SafeError(`msgpack map key of type ${typeof key}`);
      const name = `${key}`;
      const value = this.read();
      // Assigned only when Object.prototype has nothing of that name, so no setter (an extension's
      // patch) can catch it (its own prototype is fixed: null); else defined, so `__proto__` stays
      // an own key and no setter is called. Assigning keeps the object fast: defining each key
      // cost the satellite more than the rest of a call frame's decoding.
      if (name in ObjectPrototype)
        objectDefineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
      else out[name] = value;
    }
    return out;
  }

  read(): unknown {
    const b = dvGetUint8(this.#view, this.#take(1));
    if (b < 0x80) return b;
    if (b >= 0xe0) return b - 0x100;
    if (b < 0x90) return this.#map(b & 0x0f);
    if (b < 0xa0) return this.#array(b & 0x0f);
    if (b < 0xc0) return this.#str(b & 0x1f);
    switch (b) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return this.#bin(this.#uint(1));
      case 0xc5:
        return this.#bin(this.#uint(2));
      case 0xc6:
        return this.#bin(this.#uint(4));
      case 0xca:
        return dvGetFloat32(this.#view, this.#take(4), false);
      case 0xcb:
        return dvGetFloat64(this.#view, this.#take(8), false);
      case 0xcc:
        return this.#uint(1);
      case 0xcd:
        return this.#uint(2);
      case 0xce:
        return this.#uint(4);
      case 0xcf:
        return SafeNumber(dvGetBigUint64(this.#view, this.#take(8), false));
      case 0xd0:
        return dvGetInt8(this.#view, this.#take(1));
      case 0xd1:
        return dvGetInt16(this.#view, this.#take(2), false);
      case 0xd2:
        return dvGetInt32(this.#view, this.#take(4), false);
      case 0xd3:
        return SafeNumber(dvGetBigInt64(this.#view, this.#take(8), false));
      case 0xd4: {
        // fixext 1: only msgpackr's `undefined` (type 0) is part of the frames.
        const at = this.#take(2);
        if (dvGetUint8(this.#view, at) === 0) return undefined;
        throw new SafeError(`msgpack extension type ${dvGetInt8(this.#view, at)} is not part of the frames`);
      }
      case 0xd9:
        return this.#str(this.#uint(1));
      case 0xda:
        return this.#str(this.#uint(2));
      case 0xdb:
        return this.#str(this.#uint(4));
      case 0xdc:
        return this.#array(this.#uint(2));
      case 0xdd:
        return this.#array(this.#uint(4));
      case 0xde:
        return this.#map(this.#uint(2));
      case 0xdf:
        return this.#map(this.#uint(4));
      default:
        throw new SafeError(`msgpack type 0x${b.toString(16)} is not part of the frames`);
    }
  }
}

/** The one value `bytes` hold; throws on anything else (trailing bytes included). */
export function decodeValue(bytes: Uint8Array): unknown {
  const reader = new Reader(bytes);
  const value = reader.read();
  if (!reader.done) throw new SafeError("trailing bytes after the msgpack value");
  return value;
}
