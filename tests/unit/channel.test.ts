/**
 * The satellite's channel, driven under Node with a fake connection: the Deno
 * side of the wire, minus Deno.
 */
import { Channel } from "../../jail-runtime/cap/channel.js";
import { CallSignal } from "../../jail-runtime/cap/invocation.js";
import {
  DEFAULT_MAX_FRAME_BYTES,
  FrameReader,
  ProtocolError,
  decodeFrame,
  encodeFrame,
} from "../../jail-runtime/wire/codec.js";
import { BrokerFrame, SatelliteFrame } from "../../jail-runtime/wire/frames.js";

/** A connection that records what is written and replays `incoming` to reads. */
function fakeConn(incoming: Uint8Array[] = [], writeLimit = Infinity) {
  const written: Uint8Array[] = [];
  let closed = false;
  const conn: Deno.Conn = {
    async write(p: Uint8Array): Promise<number> {
      // Short writes, as a real socket may do them.
      const n = Math.min(p.length, writeLimit);
      written.push(p.slice(0, n));
      await new Promise<void>((resolve) => setImmediate(resolve));
      return n;
    },
    async read(p: Uint8Array): Promise<number | null> {
      const next = incoming.shift();
      if (next === undefined) return null;
      p.set(next);
      return next.length;
    },
    close(): void {
      closed = true;
    },
  };
  return { conn, written, isClosed: () => closed };
}

function framesIn(chunks: readonly Uint8Array[]): unknown[] {
  const reader = new FrameReader();
  const bodies = chunks.flatMap((c) => reader.push(c));
  reader.end();
  return bodies.map((b) => decodeFrame(b, SatelliteFrame));
}

describe("Channel", () => {
  test("send() writes frames whole and in the order they were sent, even through short writes", async () => {
    const { conn, written } = fakeConn([], 7);
    const channel = new Channel(conn);
    const frames = [
      {
        t: "hello",
        boot: "b",
        runtime: "tether-deno/1",
        tools: ["echo"],
        hooks: [],
        commands: [],
        contexts: [],
        routes: [],
        compactions: [],
        providers: [],
        services: [],
        searches: [],
        handles: [],
      },
      { t: "result", id: 1, ok: true, value: { content: [{ type: "text", text: "x".repeat(50) }], terminate: false } },
      { t: "cap", id: 2, token: "k", cap: "report.emit", args: JSON.stringify({ text: "hi" }) },
    ];
    await Promise.all(frames.map((f) => channel.send(f)));
    expect(written.every((w) => w.length <= 7)).toBe(true);
    expect(framesIn(written)).toEqual(frames);
  });

  test("send() on a closed channel rejects", async () => {
    const { conn, isClosed } = fakeConn();
    const channel = new Channel(conn);
    channel.close();
    expect(isClosed()).toBe(true);
    expect(channel.closed).toBe(true);
    await expect(channel.send({ t: "cancel", id: 1 })).rejects.toThrow("Channel is closed");
  });

  test("readLoop() hands every broker frame to the handler, however the reads split them, then closes", async () => {
    const sent = [
      { t: "call", id: 1, token: "k", kind: "tool", name: "echo", args: "{}", strand: "", deadline_ms: 1000 },
      { t: "cancel", id: 1 },
      { t: "cap_result", id: 3, ok: false, error: { code: "denied", msg: "rule r" } },
    ];
    const bytes = Buffer.concat(sent.map((f) => encodeFrame(f)));
    const pieces = [bytes.subarray(0, 3), bytes.subarray(3, 40), bytes.subarray(40)];
    const { conn, isClosed } = fakeConn(pieces);
    const got: unknown[] = [];
    await new Channel(conn).readLoop((frame) => got.push(frame));
    expect(got).toEqual(sent.map((f) => decodeFrame(encodeFrame(f).subarray(4), BrokerFrame)));
    expect(isClosed()).toBe(true);
  });

  // `send()` is not async and calls encodeFrame() before building its promise, so
  // a frame over the limit throws synchronously. `runInvocation` in
  // jail-runtime/cap/runtime.ts writes `await channel.send(...).catch(...)`: the
  // `.catch` fallback ("Reply could not be sent") is never reached, the rejection
  // escapes `void runInvocation(...)`, and Deno exits on it. A tool answering
  // 17 MiB of text kills its satellite (verified by hand over a real jail:
  // "Satellite 'big' exited with code 1 during 'big'", then a second boot).
  // See the report: BUG channel-sync-throw.
  test("send() of a frame too large to encode rejects rather than throwing", async () => {
    const { conn } = fakeConn();
    const channel = new Channel(conn);
    let sent: Promise<void> | undefined;
    expect(() => {
      sent = channel.send({ t: "result", id: 1, ok: true, value: "x".repeat(DEFAULT_MAX_FRAME_BYTES + 1) });
    }).not.toThrow();
    await expect(sent).rejects.toBeInstanceOf(ProtocolError);
  });

  test("post() queues without waiting: frames posted together go out in one write, in order", async () => {
    const { conn, written } = fakeConn();
    const channel = new Channel(conn);
    const frames = [1, 2, 3].map((id) => ({ t: "result", id, ok: true, value: { content: [], terminate: false } }));
    // The first starts the write; the two posted while it is on the wire go out together.
    for (const frame of frames) expect(channel.post(frame)).toBeNull();
    const cap = { t: "cap", id: 9, token: "k", cap: "report.emit", args: "{}" };
    await channel.send(cap);
    expect(framesIn(written)).toEqual([...frames, cap]);
    expect(written.length).toBeLessThan(4);
  });

  test("post() says at once when a frame cannot be encoded, and queues nothing for it", async () => {
    const { conn, written } = fakeConn();
    const channel = new Channel(conn);
    expect(
      channel.post({ t: "result", id: 1, ok: true, value: "x".repeat(DEFAULT_MAX_FRAME_BYTES + 1) }),
    ).toBeInstanceOf(ProtocolError);
    const cap = { t: "cap", id: 2, token: "k", cap: "report.emit", args: "{}" };
    await channel.send(cap);
    expect(framesIn(written)).toEqual([cap]);
    channel.close();
    expect(channel.post({ t: "cancel", id: 3 })?.message).toBe("Channel is closed");
  });
});

describe("CallSignal (an invocation's ctx.signal, made when first read)", () => {
  test("a cancel before the signal is read gives an aborted signal when it is", () => {
    const call = new CallSignal(60_000);
    call.abort(new Error("Cancelled by the caller"));
    expect(call.signal.aborted).toBe(true);
    expect((call.signal.reason as Error).message).toBe("Cancelled by the caller");
    call.end();
  });

  test("a signal read after the deadline is aborted; one read before aborts when it passes", async () => {
    expect(new CallSignal(0).signal.aborted).toBe(true);
    const call = new CallSignal(5);
    const signal = call.signal;
    expect(signal.aborted).toBe(false);
    await new Promise((resolve) => signal.addEventListener("abort", resolve));
    expect((signal.reason as Error).message).toBe("Deadline passed");
  });

  test("one without a deadline aborts only by abort()", () => {
    const open = new CallSignal();
    expect(open.signal.aborted).toBe(false);
    open.abort(new Error("x"));
    expect(open.signal.aborted).toBe(true);
    open.end();
  });
});
