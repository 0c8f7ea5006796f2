/**
 * Where JSON text stops being JSON, as a person reads it: the line and column
 * of the first character that cannot be there, and what could have been.
 * `JSON.parse`'s own messages name a position only sometimes (and never a
 * line), so the text is scanned again here, once it has failed to parse.
 *
 * The scan is iterative (a nesting depth costs no stack) and follows RFC 8259
 * as `JSON.parse` does: whitespace is space, tab, CR and LF; strings hold no
 * raw control characters; numbers have no leading zeros, `+`, `.5` or `5.`.
 */

export interface JsonSyntaxError {
  /** The offset of the offending character (the text's length when it ended too early). */
  readonly offset: number;
  /** 1-based. */
  readonly line: number;
  /** 1-based, in UTF-16 code units from the start of the line. */
  readonly column: number;
  /** `unexpected '}' at line 1, column 9 (expected a value)`. */
  readonly message: string;
}

const WS = new Set([" ", "\t", "\n", "\r"]);

/** The line and column of `offset` in `text`. */
function position(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
    line += 1;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

/** The character at `offset`, shown: `'}'`, `a line break`, `the end`. */
function shown(text: string, offset: number): string {
  if (offset >= text.length) return "end of input";
  const c = text.codePointAt(offset)!;
  if (c === 0x0a || c === 0x0d) return "line break";
  if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
    return `control character U+${c.toString(16).toUpperCase().padStart(4, "0")}`;
  return `'${String.fromCodePoint(c)}'`;
}

/**
 * The first syntax error in `text`, or null when it is one JSON value
 * (surrounded by whitespace at most).
 */
export function jsonSyntaxError(text: string): JsonSyntaxError | null {
  const fail = (offset: number, expected: string): JsonSyntaxError => {
    const { line, column } = position(text, offset);
    return {
      offset,
      line,
      column,
      message: `unexpected ${shown(text, offset)} at line ${line}, column ${column} (expected ${expected})`,
    };
  };
  const n = text.length;
  let i = 0;
  const skip = () => {
    while (i < n && WS.has(text[i]!)) i++;
  };
  /** Scans a string starting at its opening quote; null when it is fine (i is past it). */
  const string = (): JsonSyntaxError | null => {
    i++; // the opening quote
    for (;;) {
      if (i >= n) return fail(i, "'\"' to close the string");
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return null;
      }
      if (c < 0x20)
        return fail(
          i,
          "'\"' to close the string (a line break or control character in a string is written \\n, \\t or \\u00XX)",
        );
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === undefined) return fail(i + 1, "an escape after '\\'");
        if ('"\\/bfnrt'.includes(e)) {
          i += 2;
          continue;
        }
        if (e === "u") {
          for (let k = 0; k < 4; k++) {
            if (!/^[0-9a-fA-F]$/.test(text[i + 2 + k] ?? "")) return fail(i + 2 + k, "four hex digits after '\\u'");
          }
          i += 6;
          continue;
        }
        return fail(i + 1, 'one of \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX');
      }
      i++;
    }
  };
  const digits = (): number => {
    const start = i;
    while (i < n && text.charCodeAt(i) >= 0x30 && text.charCodeAt(i) <= 0x39) i++;
    return i - start;
  };
  const number = (): JsonSyntaxError | null => {
    if (text[i] === "-") i++;
    if (text[i] === "0") i++;
    else if (digits() === 0) return fail(i, "a digit");
    if (text[i] === ".") {
      i++;
      if (digits() === 0) return fail(i, "a digit after '.'");
    }
    if (text[i] === "e" || text[i] === "E") {
      i++;
      if (text[i] === "+" || text[i] === "-") i++;
      if (digits() === 0) return fail(i, "a digit in the exponent");
    }
    return null;
  };

  /** The open containers, innermost last. */
  const stack: Array<"[" | "{"> = [];
  type Want = "value" | "first-value" | "key" | "first-key" | "after";
  let want: Want = "value";
  for (;;) {
    skip();
    if (want === "after") {
      const top = stack.at(-1);
      if (top === undefined) return i >= n ? null : fail(i, "the end of the text after the value");
      const close = top === "[" ? "]" : "}";
      if (text[i] === ",") {
        i++;
        want = top === "[" ? "value" : "key";
      } else if (text[i] === close) {
        i++;
        stack.pop();
      } else {
        return fail(i, `',' or '${close}'`);
      }
      continue;
    }
    if (want === "key" || want === "first-key") {
      if (want === "first-key" && text[i] === "}") {
        i++;
        stack.pop();
        want = "after";
        continue;
      }
      if (text[i] !== '"')
        return fail(
          i,
          want === "first-key" ? "a property name in double quotes, or '}'" : "a property name in double quotes",
        );
      const bad = string();
      if (bad !== null) return bad;
      skip();
      if (text[i] !== ":") return fail(i, "':' after the property name");
      i++;
      want = "value";
      continue;
    }
    // A value.
    const c = text[i];
    if (want === "first-value" && c === "]") {
      i++;
      stack.pop();
      want = "after";
      continue;
    }
    const expected = want === "first-value" ? "a value, or ']'" : "a value";
    if (c === "{") {
      i++;
      stack.push("{");
      want = "first-key";
      continue;
    }
    if (c === "[") {
      i++;
      stack.push("[");
      want = "first-value";
      continue;
    }
    let bad: JsonSyntaxError | null = null;
    if (c === '"') bad = string();
    else if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) bad = number();
    else {
      const word = ["true", "false", "null"].find((w) => text.startsWith(w, i));
      if (word === undefined) return fail(i, expected);
      i += word.length;
    }
    if (bad !== null) return bad;
    want = "after";
  }
}

/** `JSON.parse`, or a SyntaxError whose message names the line and column (see `jsonSyntaxError`). */
export function parseJsonAt(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const located = jsonSyntaxError(text);
    throw new SyntaxError(located?.message ?? (err as Error).message);
  }
}
