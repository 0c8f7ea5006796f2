/**
 * Reading a file through a descriptor already judged by its `fstat`: at most the
 * size judged, whatever it grows to meanwhile, less when it ends first.
 */
import { readSync } from "node:fs";

/** Up to `size` bytes of `fd` from its start. */
export function readAtMost(fd: number, size: number): Buffer {
  const bytes = Buffer.alloc(size);
  let at = 0;
  for (let n = 1; at < size && n > 0; at += n) n = readSync(fd, bytes, at, size - at, at);
  return bytes.subarray(0, at);
}
