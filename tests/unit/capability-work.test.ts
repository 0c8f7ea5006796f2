/**
 * The pieces the capability pipeline leans on: bounded concurrency (permits),
 * base64 bodies decoded by a linear pass, the in-flight registry's re-judging,
 * and an exchange's state across redirects.
 */
import { decodeBase64, requestBodyBound } from "../../broker/caps/base64.js";
import { CapabilityWork, type LiveEgress } from "../../broker/caps/in-flight.js";
import { Permits, acquireAll } from "../../broker/caps/permits.js";
import { Exchange } from "../../broker/egress/exchange.js";

describe("Permits", () => {
  test("grants up to the limit, then queues in order; a release hands the permit to the next waiter", async () => {
    const permits = new Permits(2, "limits.fetches");
    const never = new AbortController().signal;
    const a = (await permits.acquire(never))!;
    const b = (await permits.acquire(never))!;
    expect(permits.inUse).toBe(2);
    const order: string[] = [];
    const c = permits.acquire(never).then((r) => (order.push("c"), r));
    const d = permits.acquire(never).then((r) => (order.push("d"), r));
    a();
    a(); // a second release of the same permit is ignored
    const releaseC = (await c)!;
    expect(order).toEqual(["c"]);
    b();
    await d;
    expect(order).toEqual(["c", "d"]);
    releaseC();
    expect(permits.inUse).toBe(1);
  });

  test("a waiter whose signal aborts gets null and leaves the queue; the permit goes to the next", async () => {
    const permits = new Permits(1, "limits.fetches");
    const release = (await permits.acquire(new AbortController().signal))!;
    const gone = new AbortController();
    const first = permits.acquire(gone.signal);
    const second = permits.acquire(new AbortController().signal);
    gone.abort();
    expect(await first).toBeNull();
    release();
    expect(await second).not.toBeNull();
  });

  test("acquireAll takes every bound, or none, naming the one it waited on", async () => {
    const own = new Permits(1, "limits.fetches");
    const broker = new Permits(1, "broker:fetches");
    const held = await acquireAll([own, broker], new AbortController().signal);
    if (!("release" in held)) throw new Error("expected permits");
    const gone = new AbortController();
    const waiting = acquireAll([new Permits(1, "other"), broker], gone.signal);
    gone.abort();
    expect(await waiting).toEqual({ waitingOn: broker });
    held.release();
    expect(own.inUse + broker.inUse).toBe(0);
  });
});

describe("base64 request bodies", () => {
  test.each([
    ["", ""],
    ["aGk=", "hi"],
    ["aGk/", "hi?"],
    ["AAEC", "\u0000\u0001\u0002"],
  ])("%j decodes", (text, bytes) => {
    expect(Buffer.from(decodeBase64(text)!).toString("latin1")).toBe(bytes);
  });

  test.each(["a", "aGk", "aG=k", "a===", "aGk-", "aGk_", "aGk=\n", "=aGk"])(
    "%j is not padded standard base64",
    (text) => {
      expect(decodeBase64(text)).toBeNull();
    },
  );

  test("megabytes decode by a linear pass (a pattern over them exhausted the stack)", () => {
    const bytes = Buffer.alloc(6 * 1024 * 1024, 7);
    expect(decodeBase64(bytes.toString("base64"))!.length).toBe(bytes.length);
  });

  test("the length bound is the longest text that can decode to at most that many bytes", () => {
    for (const n of [0, 1, 2, 3, 4, 1000, 4 * 1024 * 1024]) {
      expect(Buffer.alloc(n).toString("base64").length).toBeLessThanOrEqual(requestBodyBound(n));
      expect(Buffer.alloc(n + 3).toString("base64").length).toBeGreaterThan(requestBodyBound(n));
    }
  });
});

describe("CapabilityWork", () => {
  function egress(
    refuse: () => { rule: string; reason: string } | null,
  ): LiveEgress & { withdrawn: Array<{ rule: string; reason: string }> } {
    const withdrawn: Array<{ rule: string; reason: string }> = [];
    return {
      extension: "x",
      sessionId: "s",
      withdrawn,
      recheck: async () => refuse(),
      withdraw: (r) => withdrawn.push(r),
    };
  }

  test("recheck withdraws exactly the requests that no longer pass; a released one is not asked", async () => {
    const work = new CapabilityWork();
    let offline = false;
    const a = egress(() => (offline ? { rule: "session:offline", reason: "offline" } : null));
    const b = egress(() => null);
    const c = egress(() => ({ rule: "x", reason: "y" }));
    const releaseA = work.hold(a);
    const releaseB = work.hold(b);
    work.hold(c)(); // released before any recheck
    await work.recheck();
    expect([a.withdrawn, b.withdrawn, c.withdrawn]).toEqual([[], [], []]);
    offline = true;
    await work.recheck();
    expect(a.withdrawn).toEqual([{ rule: "session:offline", reason: "offline" }]);
    expect(b.withdrawn).toEqual([]);
    releaseA();
    releaseB();
  });

  test("a change during a recheck gets one more pass rather than being lost", async () => {
    const work = new CapabilityWork();
    let calls = 0;
    let gate: () => void = () => {};
    const slow: LiveEgress = {
      extension: "x",
      sessionId: "s",
      recheck: () => {
        calls++;
        return calls === 1 ? new Promise((r) => (gate = () => r(null))) : Promise.resolve(null);
      },
      withdraw: () => {},
    };
    const release = work.hold(slow);
    const first = work.recheck();
    const second = work.recheck(); // asked while the first pass runs
    gate();
    await Promise.all([first, second]);
    expect(calls).toBe(2);
    release();
  });

  test("settle waits for tracked operations; abort signals them", async () => {
    const work = new CapabilityWork();
    let done = false;
    const op = new Promise<void>((resolve) => work.signal.addEventListener("abort", () => ((done = true), resolve())));
    void work.track(op);
    expect(work.pending).toBe(1);
    work.abort("destroyed");
    await work.settle();
    expect(done).toBe(true);
    expect(work.pending).toBe(0);
  });
});

describe("Exchange across redirects", () => {
  function start(method = "POST") {
    const ex = Exchange.start({
      url: "http://a.test/x",
      method,
      headers: [
        ["authorization", "t"],
        ["cookie", "c"],
        ["content-type", "text/plain"],
        ["x-ok", "1"],
        ["host", "evil"],
      ],
      body: new Uint8Array([1]),
    });
    if ("error" in ex) throw new Error(ex.error);
    return ex;
  }

  test("hop-by-hop headers never travel; credentials stay on the origin and go when it changes", () => {
    const ex = start("GET");
    expect(ex.headers.map(([n]) => n)).toEqual(["authorization", "cookie", "content-type", "x-ok"]);
    expect(ex.follow("/y", 307)).toBeNull();
    expect(ex.headers.map(([n]) => n)).toContain("authorization");
    expect(ex.follow("http://b.test/z", 307)).toBeNull();
    expect(ex.headers.map(([n]) => n)).toEqual(["content-type", "x-ok"]);
    expect(ex.redirects).toBe(2);
  });

  test("303, and 301/302 after POST, become a GET without a body; 307 keeps both", () => {
    for (const [status, method, body] of [
      [303, "GET", null],
      [301, "GET", null],
      [302, "GET", null],
      [307, "POST", 1],
      [308, "POST", 1],
    ] as const) {
      const ex = start();
      ex.follow("/next", status);
      expect([ex.method, ex.body === null ? null : ex.body.length]).toEqual([method, body]);
    }
  });

  test("a Location that is not a URL is an error, and a URL that is not one does not start", () => {
    expect(start().follow("http://[bad", 302)).toEqual({ error: "a redirect's Location is not a URL" });
    expect(Exchange.start({ url: "not a url", method: "GET", headers: [], body: null })).toEqual({
      error: "'not a url' is not a URL",
    });
  });
});
