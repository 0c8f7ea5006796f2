/**
 * Paths a path-prefix rule cannot vouch for.
 *
 * The judge sees the WHATWG-normalised path; the server decodes it again, by
 * its own rules. A prefix rule (`/v1`) is only as good as the agreement
 * between the two, so a path matched against one is refused when a server
 * could read it as something else:
 *
 * - a path parameter (`;`): many servers drop `;…` from a segment before
 *   routing, so `/v1/..;/admin` is `/v1/..` — that is `/admin` — to them;
 * - an encoded `.`, `/`, `\` or `;` at **any** decoding depth (`%2e`,
 *   `%252e`, `%25252e` …): a server or proxy that decodes once more than the
 *   broker turns it into a dot segment or a separator;
 * - percent-encoding that is malformed (`%zz`, `%u002e`) or decodes to
 *   invalid UTF-8 — overlong forms (`%c0%ae` is `.` to a lenient decoder),
 *   surrogates, stray continuation bytes — at any depth;
 * - a control character (`%00`) at any depth;
 * - a path still changing after `MAX_DECODES` decodings.
 *
 * Paths matched against a rule without a prefix are not affected: such a rule
 * allows every path of its host anyway.
 */
/** Decodings tried before a path that keeps changing is refused (the probes go to depth 3). */
export const MAX_DECODES = 8;

export type PathProblem =
  | "params"
  | "encoded-dot"
  | "encoded-slash"
  | "encoded-backslash"
  | "bad-encoding"
  | "bad-utf8"
  | "control"
  | "too-deep";

export interface UnsafePath {
  readonly problem: PathProblem;
  /** Why, in words, naming the decoding depth where it showed. */
  readonly why: string;
}

// fatal: overlong forms, surrogates and stray bytes throw instead of becoming U+FFFD.
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/**
 * One percent-decoding, as a server would do it: `%XX` to
 * bytes, the bytes read as UTF-8. Null when they are not UTF-8.
 */
function decodeOnce(text: string): string | null {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "%" && /^[0-9a-f]{2}$/i.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      const code = text.codePointAt(i)!;
      if (code > 0xffff) i++; // the second half of a surrogate pair
      for (const b of encoder.encode(String.fromCodePoint(code))) bytes.push(b);
    }
  }
  try {
    return strictUtf8.decode(new Uint8Array(bytes));
  } catch {
    return null;
  }
}

const at = (depth: number) => (depth === 0 ? "" : ` (after decoding ${depth} time${depth === 1 ? "" : "s"})`);

/** The first reason a server may read `path` differently from the judge, or null when it cannot. */
export function unsafePath(path: string): UnsafePath | null {
  // Only the path as sent can hold malformed escapes that matter: a decoded `%` is a literal ("100%25").
  if (/%(?![0-9a-f]{2})/i.test(path))
    return {
      problem: "bad-encoding",
      why: "holds a '%' that is not followed by two hex digits, which servers decode in different ways",
    };
  let text = path;
  for (let depth = 0; depth <= MAX_DECODES; depth++) {
    if (text.includes(";") || /%3b/i.test(text)) {
      return {
        problem: "params",
        why: `holds a path parameter (';')${at(depth)}, which servers may strip before routing`,
      };
    }
    if (/%2e/i.test(text))
      return {
        problem: "encoded-dot",
        why: `holds an encoded '.'${at(depth)}, which a server that decodes again may read as a dot segment`,
      };
    if (/%2f/i.test(text))
      return {
        problem: "encoded-slash",
        why: `holds an encoded '/'${at(depth)}, which a server that decodes again may read as a separator`,
      };
    if (/%5c/i.test(text) || text.includes("\\")) {
      return {
        problem: "encoded-backslash",
        why: `holds an encoded '\\'${at(depth)}, which a server may read as a separator`,
      };
    }
    if (/%u[0-9a-f]{4}/i.test(text))
      return {
        problem: "bad-encoding",
        why: `holds a '%u' escape${at(depth)}, which some servers decode as a character`,
      };
    if (/[\u0000-\u001f\u007f]/.test(text)) return { problem: "control", why: `holds a control character${at(depth)}` };
    const next = decodeOnce(text);
    if (next === null) {
      return {
        problem: "bad-utf8",
        why:
          `holds percent-encoded bytes that are not valid UTF-8${at(depth)}; ` +
          `a lenient decoder reads overlong forms such as %c0%ae as '.'`,
      };
    }
    if (next === text) return null;
    text = next;
  }
  return { problem: "too-deep", why: `is still percent-encoded after ${MAX_DECODES} decodings` };
}
