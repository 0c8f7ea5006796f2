/**
 * Keeps an injected secret from coming back to the extension: every encoding
 * in the generated set (encodings.ts) of the value and of the form it was sent
 * in is replaced with `[secret]` in what a response hands back (headers, body,
 * a redirect's Location, the URL) and in failure messages. The body reaches
 * this already decoded: the broker chooses the request's Accept-Encoding and
 * undoes any content-coding itself (egress/content-coding.ts). What no
 * encoding catches — a hash of the token, the token a byte per response —
 * is not defended: docs/secrets.md.
 */
import { secretEncodings, type SecretEncoding } from "./encodings.js";

export const REDACTED = "[secret]";

export class Redactor {
  #forms: SecretEncoding[] = [];

  /** Adds a value and the form it was sent in. */
  add(value: string, sent: string): void {
    const known = new Set(this.#forms.map((f) => `${f.anyCase}:${f.text}`));
    for (const form of [...secretEncodings(value), ...(sent === value ? [] : secretEncodings(sent))]) {
      if (!known.has(`${form.anyCase}:${form.text}`)) this.#forms.push(form);
    }
  }

  get empty(): boolean {
    return this.#forms.length === 0;
  }

  text(s: string): string {
    if (this.empty) return s;
    return Buffer.from(this.bytes(Buffer.from(s, "utf8"))).toString("utf8");
  }

  bytes(body: Uint8Array): Uint8Array {
    if (this.empty || body.length === 0) return body;
    const raw = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("latin1");
    const folded = asciiLower(raw);
    const spans: Array<[number, number]> = [];
    for (const form of this.#forms) {
      const haystack = form.anyCase ? folded : raw;
      const needle = form.anyCase ? asciiLower(form.text) : form.text;
      for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1))
        spans.push([at, at + needle.length]);
    }
    if (spans.length === 0) return body;
    spans.sort((a, b) => a[0] - b[0]);
    // Overlapping matches are one span; each span becomes one [secret].
    const parts: string[] = [];
    let cursor = 0;
    let [start, end] = spans[0]!;
    for (const [s, e] of spans.slice(1)) {
      if (s < end) {
        end = Math.max(end, e);
        continue;
      }
      parts.push(raw.slice(cursor, start), REDACTED);
      cursor = end;
      [start, end] = [s, e];
    }
    parts.push(raw.slice(cursor, start), REDACTED, raw.slice(end));
    return Buffer.from(parts.join(""), "latin1");
  }
}

/** ASCII letters lowered, every other byte as it is (so positions match the original one for one). */
function asciiLower(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}
