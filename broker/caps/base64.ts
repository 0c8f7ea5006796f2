/**
 * Request bodies arrive as base64 text. Their size is bounded by the text's
 * length before anything decodes them, and the check that the text is base64
 * is one linear pass (a regular expression over megabytes can exhaust the
 * stack).
 */

/** The longest base64 text that can decode to at most `bytes` bytes. */
export function requestBodyBound(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

function isBase64Char(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47;
}

/** The bytes of standard, padded base64 text, or null when it is not that. */
export function decodeBase64(text: string): Uint8Array | null {
  if (text.length % 4 !== 0) return null;
  let end = text.length;
  if (end > 0 && text.charCodeAt(end - 1) === 61) end--;
  if (end > 0 && text.charCodeAt(end - 1) === 61 && text.length - end === 1) end--;
  for (let i = 0; i < end; i++) if (!isBase64Char(text.charCodeAt(i))) return null;
  return new Uint8Array(Buffer.from(text, "base64"));
}
