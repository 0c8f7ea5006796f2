/**
 * A short plain-text answer from `tether serve`'s HTTP side (a
 * 404, a pointer elsewhere); never sniffed as anything else.
 */
import type { ServerResponse } from "node:http";

export function plainText(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    "content-length": String(Buffer.byteLength(body)),
    "x-content-type-options": "nosniff",
  });
  res.end(body);
}
