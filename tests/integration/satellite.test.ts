/**
 * The satellite's behaviours over real jailed Deno processes: serving, crashes,
 * deadlines, deaths, the queue, cancellation, tokens, idle reaping, shutdown.
 */
import { readdirSync, readFileSync } from "node:fs";
import { bundleToTemp, slotFor, type Bundled } from "../support/satellites.js";
import type { SatelliteSlot } from "../../broker/satellite/slot.js";
import type { Cap } from "../../jail-runtime/wire/frames.js";

let echo: Bundled;
let misbehave: Bundled;
const slots: SatelliteSlot[] = [];

function track(slot: SatelliteSlot): SatelliteSlot {
  slots.push(slot);
  return slot;
}

function call(name: string, args: unknown = {}, deadlineMs = 2_000) {
  return { kind: "tool" as const, name, args: JSON.stringify(args), strand: "s1", deadlineMs };
}

/** Waits on a condition (polled); fails only if it never holds. */
async function until(what: string, test: () => boolean, guardMs = 30_000): Promise<void> {
  for (let waited = 0; !test(); waited += 10) {
    if (waited > guardMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** CPU time (user + system, in clock ticks) of `pid` and all its descendants, from /proc. */
function treeCpuTicks(pid: number): number {
  const procs = new Map<number, { ppid: number; ticks: number }>();
  for (const entry of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid … utime(14) stime(15): split after the last ')' (comm may hold anything).
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      procs.set(Number(entry), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  const tree = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [p, info] of procs) {
      if (!tree.has(p) && tree.has(info.ppid)) {
        tree.add(p);
        grew = true;
      }
    }
  }
  for (const p of tree) total += procs.get(p)?.ticks ?? 0;
  return total;
}

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  echo = await bundleToTemp("manifests/echo");
  misbehave = await bundleToTemp("manifests/misbehave");
});

afterEach(async () => {
  await Promise.all(slots.splice(0).map((s) => s.destroy("test over")));
});

afterAll(() => {
  echo.cleanup();
  misbehave.cleanup();
});

test("a satellite answers tool calls and streams partial reports in order", async () => {
  const slot = track(slotFor(echo));
  const partials: string[] = [];
  const counted = await slot.invoke(call("count", { n: 3 }), { onReport: (t) => partials.push(t) });
  expect(counted).toEqual({
    ok: true,
    value: {
      content: [
        { type: "text", text: "Counted to 3" },
        { type: "json", json: { n: 3 } },
      ],
      terminate: false,
    },
  });
  expect(partials).toEqual(["counted 1 of 3", "counted 2 of 3", "counted 3 of 3"]);
  const echoed = await slot.invoke(call("echo", { text: "héllo ✓" }));
  expect(echoed).toEqual({ ok: true, value: { content: [{ type: "text", text: "héllo ✓" }], terminate: false } });
  expect(slot.boots).toBe(1);
});

test("one satellite serves many invocations", async () => {
  const slot = track(slotFor(echo));
  for (let i = 0; i < 20; i++) {
    const r = await slot.invoke(call("echo", { text: `n${i}` }));
    expect(r).toEqual({ ok: true, value: { content: [{ type: "text", text: `n${i}` }], terminate: false } });
  }
  expect(slot.boots).toBe(1);
});

test("unknown tools and bad arguments are answered with the seed's codes", async () => {
  const slot = track(slotFor(echo));
  expect(await slot.invoke(call("nope"))).toEqual({
    ok: false,
    error: { code: "unknown_tool", msg: "Unknown tool 'nope'; this extension serves [count, echo]" },
  });
  expect(await slot.invoke(call("echo", { text: 5 }))).toEqual({
    ok: false,
    error: { code: "bad_arguments", msg: "tool 'echo': expected string at .text, got 5" },
  });
  const notJson = await slot.invoke({ ...call("echo"), args: "{not json" });
  expect(notJson).toEqual({
    ok: false,
    error: { code: "bad_arguments", msg: "Arguments for tool 'echo' are not JSON" },
  });
});

test("a tool that throws is answered crashed and the satellite keeps serving", async () => {
  const slot = track(slotFor(misbehave));
  const crashed = await slot.invoke(call("throw"));
  expect(crashed).toEqual({ ok: false, error: { code: "crashed", msg: "Error: boom, as asked" } });
  const pid = slot.process?.pid;
  expect(await slot.invoke(call("sleep", { ms: 1 }))).toMatchObject({ ok: true });
  expect(slot.process?.pid).toBe(pid);
  expect(slot.boots).toBe(1);
});

test("past its deadline a call is answered timeout, the satellite killed, and the next call boots a fresh one", async () => {
  const slot = track(slotFor(misbehave));
  const first = slot.invoke(call("sleep", { ms: 1 }));
  await first;
  const oldPid = slot.process?.pid;
  const timedOut = await slot.invoke(call("loop", {}, 300));
  expect(timedOut).toEqual({
    ok: false,
    error: { code: "timeout", msg: "'loop' did not answer within its 300 ms deadline; the satellite was stopped" },
  });
  await until("the timed-out satellite to be gone", () => !alive(oldPid));
  const next = await slot.invoke(call("sleep", { ms: 1 }));
  expect(next).toMatchObject({ ok: true });
  expect(slot.process?.pid).not.toBe(oldPid);
  expect(slot.boots).toBe(2);
});

test("calls queued behind a timed-out call are served by the fresh satellite", async () => {
  const slot = track(slotFor(misbehave));
  const stuck = slot.invoke(call("loop", {}, 300));
  const behind = [slot.invoke(call("sleep", { ms: 1 })), slot.invoke(call("sleep", { ms: 2 }))];
  expect((await stuck).ok).toBe(false);
  const answers = await Promise.all(behind);
  expect(answers.map((a) => a.ok)).toEqual([true, true]);
  expect(slot.boots).toBe(2);
});

test("a satellite that dies mid-call fails that call with crashed and the next call boots a new one", async () => {
  const slot = track(slotFor(misbehave));
  const died = await slot.invoke(call("exit"));
  expect(died.ok).toBe(false);
  if (!died.ok) {
    expect(died.error.code).toBe("crashed");
    expect(died.error.msg).toContain("exited with code 7");
  }
  expect(await slot.invoke(call("sleep", { ms: 1 }))).toMatchObject({ ok: true });
  expect(slot.boots).toBe(2);
});

test("a heap bomb kills only its satellite; the answer says it ran out of memory", async () => {
  const slot = track(slotFor(misbehave));
  const bombed = await slot.invoke(call("bomb", {}, 20_000));
  expect(bombed.ok).toBe(false);
  if (!bombed.ok) {
    expect(bombed.error.code).toBe("crashed");
    expect(bombed.error.msg).toContain("ran out of memory (limit 64 MiB)");
  }
  expect(await slot.invoke(call("sleep", { ms: 1 }))).toMatchObject({ ok: true });
});

test("a caller who can wait never sees busy: concurrent calls queue and all succeed", async () => {
  const slot = track(slotFor(echo));
  const answers = await Promise.all(
    Array.from({ length: 10 }, (_, i) => slot.invoke(call("echo", { text: String(i) }))),
  );
  expect(answers.map((a) => (a.ok ? (a.value.content[0] as { text: string }).text : a.error.code))).toEqual(
    Array.from({ length: 10 }, (_, i) => String(i)),
  );
  expect(slot.boots).toBe(1);
});

test("cancelling a running call aborts ctx.signal and ends the call cancelled; the satellite goes on", async () => {
  const slot = track(slotFor(misbehave));
  await slot.invoke(call("sleep", { ms: 1 })); // booted: the next call starts at once
  const controller = new AbortController();
  const pending = slot.invoke(call("sleep", { ms: 30_000 }, 60_000), { signal: controller.signal });
  await until("the call to be handed to the satellite", () => slot.state === "busy");
  controller.abort();
  expect(await pending).toEqual({ ok: false, error: { code: "cancelled", msg: "Cancelled by the caller" } });
  // The satellite saw the abort (its sleep resolved early): the next call, with a 2 s deadline,
  // is served by the same process rather than timing out behind a 30 s sleep.
  expect(await slot.invoke(call("sleep", { ms: 1 }))).toMatchObject({ ok: true });
  expect(slot.boots).toBe(1);
});

test("cancelling a queued call removes it before it reaches the satellite", async () => {
  const slot = track(slotFor(misbehave));
  const first = slot.invoke(call("sleep", { ms: 200 }));
  const controller = new AbortController();
  const queued = slot.invoke(call("sleep", { ms: 1 }), { signal: controller.signal });
  controller.abort();
  expect(await queued).toEqual({ ok: false, error: { code: "cancelled", msg: "Cancelled while waiting its turn" } });
  expect((await first).ok).toBe(true);
});

test("a call whose limit counts its wait ends timeout while still queued, and never reaches the satellite", async () => {
  const slot = track(slotFor(misbehave));
  await slot.invoke(call("sleep", { ms: 1 })); // booted: the first call below holds the satellite
  const holder = new AbortController();
  let firstDone = false;
  const first = slot.invoke(call("sleep", { ms: 30_000 }, 60_000), { signal: holder.signal }).finally(() => {
    firstDone = true;
  });
  const late = { afterMs: 100, message: "hook 'x' passed its time limit of 50 ms" };
  const queued = slot.invoke(call("sleep", { ms: 1 }), { late });
  expect(await queued).toEqual({ ok: false, error: { code: "timeout", msg: late.message } });
  // It answered while the call ahead of it still held the satellite: the slot's timer, not a turn.
  expect(firstDone).toBe(false);
  expect(slot.open).toBe(1);
  holder.abort();
  expect(await first).toMatchObject({ ok: false, error: { code: "cancelled" } });
});

test("an open call past its limit is cancelled and ends timeout; the satellite goes on", async () => {
  const slot = track(slotFor(misbehave));
  await slot.invoke(call("sleep", { ms: 1 })); // booted: the next call starts at once
  const late = { afterMs: 200, message: "hook 'x' passed its time limit of 150 ms" };
  expect(await slot.invoke(call("sleep", { ms: 30_000 }, 60_000), { late })).toEqual({
    ok: false,
    error: { code: "timeout", msg: late.message },
  });
  // The satellite was told to stop (its sleep ended early): the same process serves the next call.
  expect(await slot.invoke(call("sleep", { ms: 1 }))).toMatchObject({ ok: true });
  expect(slot.boots).toBe(1);
});

test("a capability call after the answer carries a revoked token and is refused token_revoked", async () => {
  const refused: Cap[] = [];
  const slot = track(slotFor(misbehave, {}, { observeRefusals: (cap) => refused.push(cap) }));
  expect(await slot.invoke(call("cap_later"))).toMatchObject({ ok: true });
  await until("the late capability call's refusal", () => refused.length > 0);
  expect(refused.map((c) => c.cap)).toEqual(["kv.get"]);
});

test("a late capability call is refused even while another invocation is open: it carries its own ended token", async () => {
  const refused: Cap[] = [];
  const served: string[] = [];
  const slot = track(
    slotFor(
      misbehave,
      {},
      {
        capacity: 2,
        observeRefusals: (cap) => refused.push(cap),
        dispatch: async (cap, inv) => {
          served.push(`${cap.cap} in ${inv.name}`);
          return { ok: true, value: null };
        },
      },
    ),
  );
  // `sleep` stays open on the same process while cap_later's timer fires its call.
  const sleeping = slot.invoke(call("sleep", { ms: 1_500 }));
  expect(await slot.invoke(call("cap_later"))).toMatchObject({ ok: true });
  await until("the late capability call's refusal", () => refused.length > 0);
  expect(refused.map((c) => c.cap)).toEqual(["kv.get"]);
  expect(served).toEqual([]);
  expect(slot.open).toBe(1);
  expect(await sleeping).toMatchObject({ ok: true });
});

test("a capability call inside an invocation reaches the dispatcher with the invocation's identity", async () => {
  const seen: Array<{ cap: string; name: string; strand: string }> = [];
  const slot = track(
    slotFor(
      misbehave,
      {},
      {
        dispatch: async (cap, inv) => {
          seen.push({ cap: cap.cap, name: inv.name, strand: inv.strand });
          return { ok: false, error: { code: "denied", msg: "no" } };
        },
      },
    ),
  );
  // `garbage` sends an invalid frame: it never reaches the dispatcher, and the satellite is disconnected.
  const garbage = await slot.invoke(call("garbage"));
  expect(garbage.ok).toBe(false);
  if (!garbage.ok) expect(garbage.error.code).toBe("crashed");
  expect(seen).toEqual([]);
  expect(await slot.invoke(call("sleep", { ms: 1 }))).toMatchObject({ ok: true });
  expect(slot.boots).toBe(2);
});

test("an answer that is not a tool outcome is answered crashed, naming the field", async () => {
  const slot = track(slotFor(misbehave));
  const bad = await slot.invoke(call("bad_value"));
  expect(bad.ok).toBe(false);
  if (!bad.ok) {
    expect(bad.error.code).toBe("crashed");
    expect(bad.error.msg).toContain("'bad_value' answered a malformed tool value");
  }
});

test("megabytes on stdout are drained and bounded; the broker stays fine", async () => {
  const lines: string[] = [];
  const log = {
    debug: () => {},
    info: (msg: string, f?: Record<string, unknown>) => lines.push(`${msg} ${String(f?.line ?? "").length}`),
    warn: (msg: string) => lines.push(msg),
    error: () => {},
    child() {
      return this;
    },
  };
  const slot = track(slotFor(misbehave, { log }));
  expect(await slot.invoke(call("spew", { mb: 8 }, 20_000))).toMatchObject({ ok: true });
  expect(lines.length).toBeLessThan(200);
  expect(lines.some((l) => l.includes("passed its 65536-byte log budget"))).toBe(true);
});

test("a served/declared mismatch refuses to boot and names both lists", async () => {
  const slot = track(slotFor(echo, { declared: { tools: ["echo", "extra"], hooks: [] } }));
  const r = await slot.invoke(call("echo", { text: "x" }));
  expect(r).toEqual({
    ok: false,
    error: {
      code: "served_mismatch",
      msg:
        "Extension 'echo' is broken: the manifest declares tools [echo, extra] and hooks [], but the artifact serves tools [count, echo] and hooks []: " +
        "declared in manifest.toml but not exported from the entry module: tool extra (export it in `tools`, or remove its [[tool]] row); " +
        'exported from the entry module but not declared in manifest.toml: tool count (add a [[tool]] row with name = "count", or remove it from `tools`). ' +
        "Its author must fix the extension (tether check <folder> lists what to change), then install it again",
    },
  });
});

test("idle satellites are reaped and boot again on the next call", async () => {
  const slot = track(slotFor(echo, {}, { idleMs: 200 }));
  await slot.invoke(call("echo", { text: "a" }));
  const pid = slot.process?.pid;
  expect(alive(pid)).toBe(true);
  await until("the idle satellite to be reaped", () => slot.process === null);
  await until("the reaped process to be gone", () => !alive(pid));
  expect(await slot.invoke(call("echo", { text: "b" }))).toMatchObject({ ok: true });
  expect(slot.boots).toBe(2);
});

test("close() drains queued calls before shutting down; later calls are refused", async () => {
  const slot = track(slotFor(misbehave));
  const a = slot.invoke(call("sleep", { ms: 150 }));
  const b = slot.invoke(call("sleep", { ms: 10 }));
  const closing = slot.close();
  expect((await a).ok).toBe(true);
  expect((await b).ok).toBe(true);
  await closing;
  expect(slot.process).toBeNull();
  expect(await slot.invoke(call("sleep", { ms: 1 }))).toMatchObject({ ok: false, error: { code: "closed" } });
});

test("destroy() aborts: the open call (at once) and the queued ones fail closed, naming why", async () => {
  const slot = track(slotFor(misbehave));
  await slot.invoke(call("sleep", { ms: 1 })); // booted: the next call starts at once
  const open = slot.invoke(call("sleep", { ms: 30_000 }, 60_000));
  await until("the call to be handed to the satellite", () => slot.state === "busy");
  const queued = slot.invoke(call("sleep", { ms: 1 }));
  await slot.destroy("was torn down by the test");
  expect(await open).toMatchObject({
    ok: false,
    error: {
      code: "closed",
      msg: expect.stringMatching(/^The satellite of '.+' was torn down by the test during 'sleep'$/),
    },
  });
  expect(await queued).toMatchObject({ ok: false, error: { code: "closed" } });
  await slot.destroy("again"); // safe twice
});

test.each(["bwrap", "none"] as const)(
  "the shutdown ladder reaches SIGKILL for a satellite that ignores stdin EOF and SIGTERM (%s)",
  async (sandbox) => {
    const said: string[] = [];
    const log = {
      debug: (msg: string) => said.push(msg),
      info: (msg: string) => said.push(msg),
      warn: (msg: string) => said.push(msg),
      error: (msg: string) => said.push(msg),
      child() {
        return this;
      },
    };
    const slot = track(slotFor(misbehave, { sandbox, ladderStepMs: 300, log }));
    expect(await slot.invoke(call("wedge"))).toMatchObject({ ok: true });
    const pid = slot.process!.pid!;
    // Wedged once its process tree burns CPU: 100 ms of it (10 clock ticks) is the busy loop, not an idle Deno.
    const base = treeCpuTicks(pid);
    await until("the satellite to wedge (spin)", () => treeCpuTicks(pid) - base >= 10);
    await slot.close();
    expect(alive(pid)).toBe(false);
    const ladder = said.filter((m) => /ignored (stdin EOF|SIGTERM)/.test(m));
    // Unsandboxed, the Deno process itself ignores both steps: two bounded waits, then SIGKILL.
    if (sandbox === "none")
      expect(ladder).toEqual([
        "satellite ignored stdin EOF; sending SIGTERM",
        "satellite ignored SIGTERM; sending SIGKILL",
      ]);
  },
);

test("the boot token is not in the satellite's command line or environment", async () => {
  const slot = track(slotFor(echo));
  await slot.invoke(call("echo", { text: "a" }));
  const pid = slot.process!.pid!;
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
  const environ = readFileSync(`/proc/${pid}/environ`, "utf8");
  expect(cmdline).toContain("--no-remote");
  expect(environ).toBe("");
});
