/**
 * A request's id read from JSON text that is past the JSON bounds, without
 * parsing it: one linear pass that looks only at the top object's own
 * members. The request is then refused with an error for its id (as an HTTP
 * body past them is refused with 400) instead of leaving its client waiting
 * for an answer that never comes.
 */
import type { RequestId } from "./messages.js";

/** The index of the quote that closes the string opening at `open` (or the text's length). */
function closingQuote(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return i;
  }
  return text.length;
}

/** A quoted key's text as JSON reads it (undefined: no JSON string). */
function keyOf(quoted: string): string | undefined {
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return undefined;
  }
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The value of the top member at `from` (just after its key): a string or a safe integer, else undefined. */
function idAt(text: string, from: number): RequestId | undefined {
  let i = from;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) !== 0x3a) return undefined;
  i++;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  if (text.charCodeAt(i) === 0x22) {
    try {
      return JSON.parse(text.slice(i, closingQuote(text, i) + 1)) as string;
    } catch {
      return undefined;
    }
  }
  // Any JSON number (`1.0` and `1e2` are ids 1 and 100 to JSON.parse), within a short window:
  // one that may run past it is no id read.
  const number = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 64));
  const value = number === null || number[0].length === 64 ? Number.NaN : Number(number[0]);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** The `id` of the request `text` would be (a top-level `method` and `id`), or undefined. */
export function requestIdOf(text: string): RequestId | undefined {
  let start = 0;
  while (start < text.length && isSpace(text.charCodeAt(start))) start++;
  if (text.charCodeAt(start) !== 0x7b) return undefined;
  let depth = 0;
  let expectingKey = false;
  let id: RequestId | undefined;
  let method = false;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = closingQuote(text, i);
      if (depth === 1 && expectingKey) {
        // Escaped (`"i\u0064"`), a key is the one JSON.parse reads: a duplicate `id` written so is the id.
        const raw = text.slice(i + 1, end);
        const key = raw.includes("\\") ? keyOf(text.slice(i, end + 1)) : raw;
        if (key === "id") id = idAt(text, end + 1);
        else if (key === "method") method = true;
      }
      expectingKey = false;
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      expectingKey = depth === 1;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    } else if (c === 0x2c) {
      expectingKey = depth === 1;
    }
  }
  return method ? id : undefined;
}
