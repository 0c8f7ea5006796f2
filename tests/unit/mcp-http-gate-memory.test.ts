/**
 * The HTTP gate's body (http-gate.ts) holds about its bytes while it is read,
 * however the client splits it: a body sent a byte at a time arrives as one
 * Buffer a byte (measured over loopback TCP with TCP_NODELAY), ~200 bytes
 * each when every chunk is kept.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { admit } from "../../broker/mcp/http-gate.js";
import { memoryInUse } from "./support/memory-in-use.js";

test("a body sent a byte at a time holds about its bytes, not an object per chunk", async () => {
  const body = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"${"x".repeat(1 << 17)}"}}}`;
  const bytes = Buffer.from(body);
  let before = 0;
  let peak = 0;
  async function* chunks() {
    before = memoryInUse();
    for (let i = 0; i < bytes.length; i++) {
      if (i === bytes.length - 1) peak = memoryInUse() - before;
      yield bytes.subarray(i, i + 1);
    }
  }
  const req = Object.assign(chunks(), {
    method: "POST",
    url: "/mcp",
    headers: { host: "127.0.0.1:1" },
    destroy: () => {},
  }) as unknown as IncomingMessage;
  const admitted = await admit(req, {} as ServerResponse, { port: 1, resolve: () => ({ target: "mcp" }) });
  expect(admitted).not.toBeNull();
  expect((admitted!.body as { id: number }).id).toBe(1);
  // The body is 128 KiB (a million one-byte chunks through the iterator would take the suite ~45 s): a few
  // times that at most, not two hundred.
  expect(peak).toBeLessThan(4 * bytes.length);
});
