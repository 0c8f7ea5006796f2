/**
 * The broker owns every content-coding between a server and the jail: it
 * asks for the codings it can undo (ACCEPT_ENCODING, replacing whatever the
 * extension set) and undoes the response's before anything — the secret
 * redactor above all — looks at the body, bounded while it decodes (a small
 * compressed body may expand without limit). A coding it did not ask for is
 * refused: bytes it cannot read are bytes it cannot redact.
 */
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from "node:zlib";

export const ACCEPT_ENCODING = "gzip, deflate, br";

/** Headers the broker sets on every hop itself. */
export function withBrokerEncoding(headers: ReadonlyArray<readonly [string, string]>): Array<[string, string]> {
  return [
    ...headers.filter(([name]) => name.toLowerCase() !== "accept-encoding").map(([n, v]): [string, string] => [n, v]),
    ["accept-encoding", ACCEPT_ENCODING],
  ];
}

export type Decoded =
  | { readonly body: Uint8Array; readonly headers: Array<[string, string]> }
  | { readonly error: string; readonly limit?: "body" };

/**
 * Undoes `headers`' Content-Encoding on `body` (at most `maxBytes`
 * decoded); the headers lose Content-Encoding and Content-Length.
 */
export function decodeContent(body: Uint8Array, headers: Array<[string, string]>, maxBytes: number): Decoded {
  const codings = headers
    .filter(([name]) => name.toLowerCase() === "content-encoding")
    .flatMap(([, value]) => value.split(","))
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "" && c !== "identity");
  if (codings.length === 0) return { body, headers };
  let out = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  // Applied in the order listed, so undone in reverse.
  for (const coding of codings.reverse()) {
    const options = { maxOutputLength: Math.max(1, maxBytes) };
    try {
      if (coding === "gzip" || coding === "x-gzip") out = gunzipSync(out, options);
      else if (coding === "br") out = brotliDecompressSync(out, options);
      else if (coding === "deflate") out = inflateDeflate(out, options);
      else
        return {
          error:
            `the response's content-encoding '${coding.slice(0, 40)}' ` +
            `is not one the broker asked for (${ACCEPT_ENCODING})`,
        };
    } catch (err) {
      if (
        (err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE" ||
        /Cannot create a Buffer larger|maxOutputLength|too large/i.test((err as Error).message)
      ) {
        return { error: `the response body exceeds ${maxBytes} bytes once decoded (${coding})`, limit: "body" };
      }
      return { error: `the response's ${coding} body does not decode: ${(err as Error).message.slice(0, 120)}` };
    }
  }
  const kept = headers.filter(([name]) => !["content-encoding", "content-length"].includes(name.toLowerCase()));
  return { body: out, headers: kept };
}

/** `deflate` is zlib-wrapped by the standard, raw by some servers: both are read. */
function inflateDeflate(body: Buffer, options: { maxOutputLength: number }): Buffer {
  try {
    return inflateSync(body, options);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw err;
    return inflateRawSync(body, options);
  }
}
