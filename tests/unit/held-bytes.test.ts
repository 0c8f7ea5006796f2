/**
 * Bytes read from outside are held in one buffer (`HeldBytes`), never as the chunks they came in:
 * a peer sending a byte at a time makes each kept chunk an object of ~100–200 bytes, so a bound on
 * bytes would not bound memory. The class was found four times (a satellite's frames, `tether mcp`'s
 * stdio lines and HTTP bodies, a database jail's lines); the guard below holds every reader to it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { HeldBytes } from "../../jail-runtime/wire/held-bytes.js";
import { REPO, sourcesUnder } from "./support/repo-files.js";

describe("HeldBytes", () => {
  test("holds what was appended, in order, however it was split", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 40 }), (chunks) => {
        const held = new HeldBytes(1 << 20);
        for (const chunk of chunks) expect(held.append(chunk)).toBe(true);
        expect(Buffer.from(held.view())).toEqual(Buffer.concat(chunks));
        expect(held.size).toBe(chunks.reduce((n, c) => n + c.length, 0));
      }),
    );
  });

  test("refuses a chunk that would pass the bound, and keeps what it held", () => {
    const held = new HeldBytes(10);
    expect(held.append(new Uint8Array(6).fill(1))).toBe(true);
    expect(held.append(new Uint8Array(5).fill(2))).toBe(false);
    expect([...held.view()]).toEqual([1, 1, 1, 1, 1, 1]);
    expect(held.append(new Uint8Array(4).fill(3))).toBe(true);
    expect(held.size).toBe(10);
    expect(held.append(new Uint8Array(1))).toBe(false);
  });

  test("a view handed out is never written again: not by appends, not after a release", () => {
    const held = new HeldBytes(1 << 20);
    held.append(Uint8Array.of(1, 2, 3));
    const first = held.view();
    for (let i = 0; i < 3000; i++) held.append(Uint8Array.of(9));
    held.release();
    held.append(Uint8Array.of(7, 7, 7));
    expect([...first]).toEqual([1, 2, 3]);
    expect([...held.view()]).toEqual([7, 7, 7]);
  });

  test("its buffer stays within twice the bytes held (a small whole announced gets its size at once)", () => {
    const held = new HeldBytes(1 << 24);
    for (let i = 0; i < 100_000; i++) held.append(Uint8Array.of(i & 0xff));
    const view = held.view();
    expect(view.buffer.byteLength).toBeLessThanOrEqual(2 * view.length);
    const exact = new HeldBytes(1 << 24);
    exact.append(new Uint8Array(10), 5000);
    expect(exact.view().buffer.byteLength).toBe(5000);
  });
});

/** Modules that may keep a stream's chunks in an array, and why. */
const KEEPS_CHUNKS: Record<string, string> = {
  "broker/install/bundle-job.ts": "its stdin is the broker's own request, written once",
  "broker/cli/secret.ts": "its stdin is the operator's, at the terminal",
};

test("no other module keeps the chunks of a stream in an array", () => {
  const found = [...sourcesUnder("broker"), ...sourcesUnder("jail-runtime")]
    .filter((file) => file.endsWith(".ts") && !(file in KEEPS_CHUNKS))
    .flatMap((file) =>
      readFileSync(join(REPO, file), "utf8")
        .split("\n")
        .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
        // A chunk pushed (the frame reader's own `push`, and the frames it hands out, aside), or anything pushed onto a list of chunks.
        .filter(({ line }) => /(?<!#reader|frames)\.push\(chunk\b|\b(chunks|#held)\.push\(/.test(line))
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
  expect(found).toEqual([]);
});
