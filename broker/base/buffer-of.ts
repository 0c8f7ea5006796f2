/** A Buffer over the same bytes as `bytes` (no copy): for Buffer's own methods, `toString("utf8")` among them. */
export function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
