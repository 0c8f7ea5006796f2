/**
 * The socket-level protocol harness: scripted fake satellites that speak raw
 * frames to the broker (tests/integration/fixtures/fake-satellites), launched
 * by the broker's real launch path (Deno inside bubblewrap). Each case asserts
 * the documented code or disconnection (docs/protocol.md, docs/errors.md),
 * then that the broker is fine: a real satellite still answers a call. A few
 * cases run through a real Broker and two Sessions, to show the broker keeps
 * serving every other session (and audits token refusals).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Broker } from "../../broker/broker.js";
import { readManifest, type Manifest } from "../../broker/install/manifest.js";
import { createLogger, type Logger } from "../../broker/base/log.js";
import type { SatelliteSpec } from "../../broker/satellite/spec.js";
import type { InvocationOutcome } from "../../broker/base/outcome.js";
import type { SatelliteSlot, SlotOptions } from "../../broker/satellite/slot.js";
import type { InvokeOptions } from "../../broker/base/invocation.js";
import { Session } from "../../broker/sessions/session.js";
import type { Cap } from "../../jail-runtime/wire/frames.js";
import type { CapReply } from "../../broker/base/capability.js";
import { MAX_CAPS_IN_FLIGHT } from "../../broker/satellite/process.js";
import { bundleToTemp, slotFor, type Bundled } from "../support/satellites.js";
import { SCRIPT_NAMES, SERVED_TOOLS } from "./fixtures/fake-satellites/scripts.js";
import { FAKE_DIR, buildFakeArtifact, installFakeAndWorker, readServeArtifact } from "./support/fake-extension.js";
import { envOptions } from "../support/env-options.js";

let artifacts: string;
let fakeManifest: Manifest;
let echo: Bundled;
/** A real satellite (manifests/echo), booted once: after every case it must still answer. */
let probe: SatelliteSlot;
const slots: SatelliteSlot[] = [];
let probes = 0;

function call(name: string, args: unknown = {}, deadlineMs = 5_000) {
  return { kind: "tool" as const, name, args: JSON.stringify(args), strand: "s1", deadlineMs };
}

/** A slot whose artifact is the fake satellite playing `script`; `pids` collects each booted process. */
function fakeSlot(
  script: string,
  spec: Partial<SatelliteSpec> = {},
  options: Partial<Omit<SlotOptions, "spec">> = {},
): { slot: SatelliteSlot; pids: number[] } {
  const pids: number[] = [];
  const bundled: Bundled = { manifest: fakeManifest, artifact: join(artifacts, `${script}.js`), cleanup: () => {} };
  const slot = slotFor(bundled, { name: script, ...spec }, { ...options, onBoot: (p) => pids.push(p.pid!) });
  slots.push(slot);
  return { slot, pids };
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

async function until(what: () => boolean, ms = 3_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (what()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return what();
}

function textReply(text: string): InvocationOutcome {
  return { ok: true, value: { content: [{ type: "text", text }], terminate: false } };
}

/** The one JSON block of a tool reply. */
function jsonOf(outcome: InvocationOutcome<"tool">): unknown {
  if (!outcome.ok) throw new Error(`expected a reply, got ${outcome.error.code}: ${outcome.error.msg}`);
  const block = outcome.value.content[0];
  return block?.type === "json" ? block.json : undefined;
}

/** Jailed processes this test process started that still run (bwrap; deno without it). */
function jailed(): number[] {
  const ps = execFileSync("ps", ["-o", "pid=,comm=", "--ppid", String(process.pid)], { encoding: "utf8" });
  return ps
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter(([, comm]) => comm === "bwrap" || comm === "deno")
    .map(([pid]) => Number(pid));
}

/**
 * After each case: no fake outlived its case (every script lingers on purpose,
 * so the broker must have killed it), and the broker is fine: the real
 * satellite answers a call.
 */
async function stillServing(): Promise<void> {
  const live = () => new Set([probe.process?.pid, ...slots.map((s) => s.process?.pid)].filter((p) => p !== undefined));
  expect(await until(() => jailed().every((pid) => live().has(pid)))).toBe(true);
  const text = `still serving ${++probes}`;
  expect(await probe.invoke(call("echo", { text }))).toEqual(textReply(text));
}

/** A logger that keeps the broker's warnings. */
function warnings(): { log: Logger; lines: Array<{ msg: string; fields: Record<string, unknown> }> } {
  const lines: Array<{ msg: string; fields: Record<string, unknown> }> = [];
  const log = createLogger({ level: "warn", sink: (_, msg, fields) => lines.push({ msg, fields: { ...fields } }) });
  return { log, lines };
}

beforeAll(async () => {
  fakeManifest = readManifest(FAKE_DIR);
  artifacts = mkdtempSync(join(tmpdir(), "tether-fakes-"));
  // One artifact per script, named after it: `await play("<script>")`, bundled
  // the way every artifact is (one ESM file for Deno), without the SDK.
  await Promise.all(
    SCRIPT_NAMES.map(async (script) => writeFileSync(join(artifacts, `${script}.js`), await buildFakeArtifact(script))),
  );
  echo = await bundleToTemp("manifests/echo");
  probe = slotFor(echo);
});

afterEach(async () => {
  await Promise.all(slots.splice(0).map((s) => s.destroy("test over")));
});

afterAll(async () => {
  await probe?.destroy("test over");
  echo?.cleanup();
  if (artifacts) rmSync(artifacts, { recursive: true, force: true });
});

test("the fixture's manifest and its serve script agree on the tools; no artifact contains the SDK", () => {
  expect(fakeManifest.tool.map((t) => t.name).sort()).toEqual([...SERVED_TOOLS].sort());
  expect(SCRIPT_NAMES).toContain("serve");
  for (const script of SCRIPT_NAMES)
    expect(readFileSync(join(artifacts, `${script}.js`), "utf8")).not.toContain("tether-deno/");
});

test("a well-behaved fake boots through the real launch path and answers: the harness works", async () => {
  const { slot, pids } = fakeSlot("serve");
  expect(await slot.invoke(call("echo", { text: "hi from a fake" }))).toEqual(textReply("hi from a fake"));
  expect(await slot.invoke(call("echo", { text: "again" }))).toEqual(textReply("again"));
  expect(slot.boots).toBe(1);
  expect(alive(pids[0])).toBe(true);
  await stillServing();
});

describe("boot: the hello", () => {
  test("a wrong boot token fails the boot boot_token_mismatch", async () => {
    const { slot } = fakeSlot("wrong-token");
    expect(await slot.invoke(call("echo"))).toEqual({
      ok: false,
      error: { code: "boot_token_mismatch", msg: "Satellite 'wrong-token' presented a wrong boot token" },
    });
    expect(slot.boots).toBe(0);
    await stillServing();
  });

  test.each([
    [
      "extra-tool",
      [...SERVED_TOOLS, "extra"],
      'exported from the entry module but not declared in manifest.toml: tool extra (add a [[tool]] row with name = "extra", or remove it from `tools`)',
    ],
    [
      "missing-tool",
      SERVED_TOOLS.filter((t) => t !== "echo"),
      "declared in manifest.toml but not exported from the entry module: tool echo (export it in `tools`, or remove its [[tool]] row)",
    ],
  ])(
    "a hello serving other tools than declared (%s) fails served_mismatch, naming both lists and what to change",
    async (script, served, problem) => {
      const { slot } = fakeSlot(script);
      const list = (names: readonly string[]) => `[${[...names].sort().join(", ")}]`;
      expect(await slot.invoke(call("echo"))).toEqual({
        ok: false,
        error: {
          code: "served_mismatch",
          msg: `Extension '${script}' is broken: the manifest declares tools ${list(SERVED_TOOLS)} and hooks [], but the artifact serves tools ${list(served)} and hooks []: ${problem}. Its author must fix the extension (tether check <folder> lists what to change), then install it again`,
        },
      });
      await stillServing();
    },
  );

  test.each([
    ["result-first", "result"],
    ["cap-first", "cap"],
  ])("a first frame that is not hello (%s) fails the boot protocol_violation", async (script, t) => {
    const { slot } = fakeSlot(script);
    expect(await slot.invoke(call("echo"))).toEqual({
      ok: false,
      error: { code: "protocol_violation", msg: `Expected 'hello' as the first frame, got '${t}'` },
    });
    await stillServing();
  });

  test("bytes that are not msgpack before the hello fail the boot boot_failed, with the violation in the message", async () => {
    const { slot } = fakeSlot("garbage-first");
    const r = await slot.invoke(call("echo"));
    expect(r).toMatchObject({ ok: false, error: { code: "boot_failed" } });
    if (!r.ok) expect(r.error.msg).toContain("Frame is not msgpack");
    await stillServing();
  });

  test("a second hello in the same write as the first fails the boot protocol_violation", async () => {
    const { slot, pids } = fakeSlot("hello-twice");
    // Regression: the boot used to go on to "ready" over the satellite it had just
    // killed for the violation, and handed the call to it (answered crashed).
    expect(await slot.invoke(call("echo"))).toEqual({
      ok: false,
      error: { code: "protocol_violation", msg: "Satellite 'hello-twice' sent a second 'hello'" },
    });
    expect(slot.boots).toBe(0);
    expect(pids).toEqual([]);
    await stillServing();
  });

  test("a second hello after the boot is a protocol violation: the open call ends crashed", async () => {
    const { slot, pids } = fakeSlot("hello-twice-later");
    expect(await slot.invoke(call("echo"))).toEqual({
      ok: false,
      error: {
        code: "crashed",
        msg: "Satellite 'hello-twice-later' broke the protocol (Satellite 'hello-twice-later' sent a second 'hello') during 'echo'",
      },
    });
    expect(await until(() => !alive(pids[0]))).toBe(true);
    await stillServing();
  });
});

describe("mid-call violations: the connection is closed, the open call ends crashed, the satellite is killed", () => {
  // [tool, args, what the answer's message says]
  const cases: Array<[string, unknown, string]> = [
    [
      "result_unknown_id",
      {},
      "broke the protocol (Satellite 'serve' sent a 'result' for invocation 1001, which is not open) during 'result_unknown_id'",
    ],
    ["hello_again", {}, "broke the protocol (Satellite 'serve' sent a second 'hello') during 'hello_again'"],
    [
      "frames_after_violation",
      {},
      "broke the protocol (Satellite 'serve' sent a 'result' for invocation 1001, which is not open) during 'frames_after_violation'",
    ],
    ["garbage", {}, "broke the protocol (Frame is not msgpack"],
    [
      "plain_text",
      {},
      "broke the protocol (Frame of 1751477356 bytes exceeds the 16777216-byte limit) during 'plain_text'",
    ],
    [
      "zero_length",
      {},
      "broke the protocol (Frame is not msgpack: a length of 1 bytes at offset 0 runs past the end (0 left)) during 'zero_length'",
    ],
    // Decode bounds, checked before the decoder allocates (72 KB here took msgpackr 1.11 to 1.5 GB).
    [
      "nested_headers",
      { count: 24_000 },
      "broke the protocol (Frame is not msgpack: a container of 65535 elements at offset 6 cannot fit",
    ],
    [
      "wide_map",
      { keys: 20_000 },
      "broke the protocol (Frame is more than 16384 elements (the bound for any frame)) during 'wide_map'",
    ],
    [
      "oversized",
      {},
      "broke the protocol (Frame of 16777217 bytes exceeds the 16777216-byte limit) during 'oversized'",
    ],
    ["not_a_map", {}, "broke the protocol (Frame is not a msgpack map) during 'not_a_map'"],
    ["schema_violation", {}, "broke the protocol (Bad 'result' frame: "],
    ["truncated", {}, "broke the protocol (Stream ended inside a frame ("],
    ["close_write", {}, "Satellite 'serve' closed its connection during 'close_write'"],
  ];

  test.each(cases)("%s", async (tool, args, says) => {
    const { slot, pids } = fakeSlot("serve");
    const r = await slot.invoke(call(tool, args));
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe("crashed");
      expect(r.error.msg).toContain(says);
    }
    // The fake lingers on purpose: the broker killed it.
    expect(await until(() => !alive(pids[0]))).toBe(true);
    // The next call boots a fresh satellite, which answers.
    expect(await slot.invoke(call("echo", { text: "fresh" }))).toEqual(textReply("fresh"));
    expect(slot.boots).toBe(2);
    await stillServing();
  });

  test("the frame bound is the spec's: a frame over a smaller maxFrameBytes is refused", async () => {
    const { slot } = fakeSlot("serve", { maxFrameBytes: 1024 });
    expect(await slot.invoke(call("echo", { text: "x".repeat(900) }))).toEqual(textReply("x".repeat(900)));
    const r = await slot.invoke(call("oversized", { size: 2048 }));
    expect(r).toMatchObject({ ok: false, error: { code: "crashed" } });
    if (!r.ok) expect(r.error.msg).toContain("Frame of 2048 bytes exceeds the 1024-byte limit");
    await stillServing();
  });

  test("a second result for one id: the first answers the call, the second disconnects the satellite", async () => {
    const { log, lines } = warnings();
    const { slot, pids } = fakeSlot("serve", { log });
    expect(await slot.invoke(call("result_twice"))).toEqual(textReply("first"));
    expect(await until(() => !alive(pids[0]))).toBe(true);
    expect(lines).toContainEqual({
      msg: "protocol violation; disconnecting the satellite",
      fields: { satellite: "serve", what: "a 'result' for invocation 1, which is not open" },
    });
    expect(await slot.invoke(call("echo", { text: "fresh" }))).toEqual(textReply("fresh"));
    expect(slot.boots).toBe(2);
    await stillServing();
  });
});

describe("answers the broker does not take as they are", () => {
  test.each(["running", "lost", "ok", "cancelled", "timeout", "x".repeat(256)])(
    "an error code only the broker may choose ('%s') is answered crashed",
    async (code) => {
      const { slot } = fakeSlot("serve");
      const r = await slot.invoke(call("error_code", { code }));
      expect(r).toEqual({
        ok: false,
        error: {
          code: "crashed",
          msg: `'error_code' answered the error code '${code.slice(0, 64)}', which a satellite may not give`,
        },
      });
      // An answer, not a violation: the satellite keeps serving.
      expect(await slot.invoke(call("echo", { text: "still" }))).toEqual(textReply("still"));
      expect(slot.boots).toBe(1);
    },
  );

  test.each(["refused", "unknown_tool", "bad_arguments", "denied", "unreachable"])(
    "an error code from the satellite's catalogue ('%s') passes",
    async (code) => {
      const { slot } = fakeSlot("serve");
      expect(await slot.invoke(call("error_code", { code }))).toEqual({
        ok: false,
        error: { code, msg: "chosen by the satellite" },
      });
    },
  );

  test("a JSON block nested 100,000 deep is answered crashed naming the bound, and nothing later walks it", async () => {
    const { slot } = fakeSlot("serve");
    expect(await slot.invoke(call("deep_json", { depth: 100_000 }))).toEqual({
      ok: false,
      error: {
        code: "crashed",
        msg: "'deep_json' answered a JSON block nested deeper than 128 levels at .content.0.json",
      },
    });
    expect(await slot.invoke(call("deep_json", { depth: 128 }))).toMatchObject({ ok: true });
    expect(slot.boots).toBe(1);
  });

  test("capability calls with no open invocation: refused token_revoked up to the allowance, then the satellite is replaced", async () => {
    const refused: Cap[] = [];
    const { log, lines } = warnings();
    const { slot, pids } = fakeSlot("serve", { log }, { observeRefusals: (c) => refused.push(c) });
    expect(await slot.invoke(call("stray_caps", { count: 10_000 }))).toEqual(textReply("answered"));
    expect(await until(() => !alive(pids[0]), 10_000)).toBe(true);
    expect(refused.length).toBe(16);
    expect(lines).toContainEqual({
      msg: "protocol violation; disconnecting the satellite",
      fields: { satellite: "serve", what: "more than 16 capability calls with no open invocation's token" },
    });
    // Replaced, but not at once again and again: each violation in a row doubles the wait.
    expect(slot.replacementBackoffMs).toBe(100);
    expect(await slot.invoke(call("echo", { text: "fresh" }))).toEqual(textReply("fresh"));
    expect(await slot.invoke(call("stray_caps", { count: 100 }))).toEqual(textReply("answered"));
    expect(await until(() => slot.process === null, 10_000)).toBe(true);
    expect(slot.replacementBackoffMs).toBe(200);
    expect(await slot.invoke(call("echo", { text: "again" }))).toEqual(textReply("again"));
    expect(slot.boots).toBe(3);
    await stillServing();
  });
});

describe("capability calls in flight", () => {
  test("an invocation has at most MAX_CAPS_IN_FLIGHT capability calls being served; past them each is refused busy at once", async () => {
    const { slot } = fakeSlot("serve");
    let pending = 0;
    let most = 0;
    const waiting: Array<() => void> = [];
    // A capability that takes its time (a fetch waiting for a permit, a hook asking a slow session).
    const dispatch = () => {
      most = Math.max(most, ++pending);
      return new Promise<CapReply>((resolve) =>
        waiting.push(() => {
          pending--;
          resolve({ ok: true, value: null });
        }),
      );
    };
    const count = 5_000;
    const answer = slot.invoke(call("cap_flood", { count }, 30_000), { dispatch });
    // Unbounded, every call the satellite sent is soon being served at once; bounded, most wait here.
    await until(() => most >= count, 3_000);
    for (const release of waiting.splice(0)) release();
    const r = await answer;
    expect(most).toBeLessThanOrEqual(MAX_CAPS_IN_FLIGHT);
    expect(jsonOf(r)).toEqual({ busy: count - MAX_CAPS_IN_FLIGHT });
    await stillServing();
  });
});

describe("capability tokens", () => {
  test("a cap under a forged, a stale or another satellite's live token is refused token_revoked; under its own it is served", async () => {
    const refusedA: Cap[] = [];
    const { slot: a } = fakeSlot("serve", {}, { observeRefusals: (cap) => refusedA.push(cap) });
    const { slot: b } = fakeSlot("serve", { name: "serve-b" });
    const revoked = {
      code: "token_revoked",
      msg: "Capability 'report.emit' carried a token that is not the open invocation's (called after its answer, or with a stale or forged token); it is refused",
    };

    // Its own token, while its invocation is open: served (report.emit reaches the caller).
    const reports: string[] = [];
    expect(jsonOf(await a.invoke(call("cap_with_token"), { onReport: (t) => reports.push(t) }))).toEqual({
      got: { t: "cap_result", id: 1, ok: true, value: null },
    });
    expect(reports).toEqual(["probe"]);

    // A stale token: the one of an invocation that has finished.
    const leaked: string[] = [];
    await a.invoke(call("leak_token"), { onReport: (t) => leaked.push(t) });
    const stale = leaked[0]!;
    expect(stale).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(jsonOf(await a.invoke(call("cap_with_token", { token: stale })))).toMatchObject({
      got: { ok: false, error: revoked },
    });

    // A forged token.
    expect(jsonOf(await a.invoke(call("cap_with_token", { token: "forged" })))).toMatchObject({
      got: { ok: false, error: revoked },
    });

    // Another satellite's token, live: b's invocation is open while a uses it.
    const held = new AbortController();
    const fromB: string[] = [];
    const bCall = b.invoke(call("leak_token", { hold: true }), { signal: held.signal, onReport: (t) => fromB.push(t) });
    expect(await until(() => fromB.length > 0)).toBe(true);
    expect(jsonOf(await a.invoke(call("cap_with_token", { token: fromB[0] })))).toMatchObject({
      got: { ok: false, error: revoked },
    });
    held.abort();
    expect(await bCall).toMatchObject({ ok: false, error: { code: "cancelled" } });

    expect(refusedA.map((c) => [c.cap, c.token])).toEqual([
      ["report.emit", stale],
      ["report.emit", "forged"],
      ["report.emit", fromB[0]],
    ]);
    // A refusal is an answer, not a violation: both satellites keep serving.
    expect(await a.invoke(call("echo", { text: "a" }))).toEqual(textReply("a"));
    expect(await b.invoke(call("echo", { text: "b" }))).toEqual(textReply("b"));
    expect([a.boots, b.boots]).toEqual([1, 1]);
    await stillServing();
  });
});

describe("through a real Broker: the broker keeps serving every other session", () => {
  let tmp: string;
  let broker: Broker;
  let fakes: Session;
  let other: Session;

  interface AuditRow {
    session_id: string;
    extension: string;
    capability: string;
    decision: string;
    rule: string;
    invocation_id: number | null;
  }

  function text(outcome: InvocationOutcome<"tool">): string {
    if (!outcome.ok) return `error ${outcome.error.code}: ${outcome.error.msg}`;
    return outcome.value.content.map((c) => (c.type === "text" ? c.text : "")).join("");
  }

  async function otherServes(label: string): Promise<void> {
    expect(text((await other.callTool("run", JSON.stringify({ text: label }))).outcome)).toBe(`ran: ${label}`);
  }

  function call2(session: Session, tool: string, args: unknown = {}, options: InvokeOptions = {}) {
    return session.callTool(tool, JSON.stringify(args), options).then((r) => r.outcome);
  }

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "tether-fakes-broker-"));
    broker = Broker.open({
      ...envOptions(),
      home: join(tmp, "home"),
      log: createLogger({ level: "error" }),
      graceMs: 200,
      ladderStepMs: 500,
    });
    await installFakeAndWorker(broker, readServeArtifact(artifacts));
    fakes = await Session.open(broker, { id: "fakes", workspace: tmp });
    other = await Session.open(broker, { id: "other", workspace: tmp });
  });

  afterAll(async () => {
    await fakes?.close();
    await other?.close();
    await broker?.destroy();
    rmSync(tmp, { recursive: true, force: true });
  });

  test("both extensions are active in both sessions", () => {
    for (const session of [fakes, other]) {
      const states = Object.fromEntries(session.status().map((s) => [s.name, s.state]));
      expect(states).toMatchObject({ fake: "active", worker: "active" });
    }
  });

  test("forged, stale and another session's tokens are refused token_revoked and audited", async () => {
    await otherServes("before");
    const revoked = {
      code: "token_revoked",
      msg: "Capability 'report.emit' carried a token that is not the open invocation's (called after its answer, or with a stale or forged token); it is refused",
    };
    const leaked: string[] = [];
    await call2(fakes, "leak_token", {}, { onReport: (t) => leaked.push(t) });
    expect(jsonOf(await call2(fakes, "cap_with_token", { token: leaked[0] }))).toMatchObject({
      got: { ok: false, error: revoked },
    });
    expect(jsonOf(await call2(fakes, "cap_with_token", { token: "forged" }))).toMatchObject({
      got: { ok: false, error: revoked },
    });

    const held = new AbortController();
    const fromOther: string[] = [];
    const otherCall = call2(
      other,
      "leak_token",
      { hold: true },
      { signal: held.signal, onReport: (t) => fromOther.push(t) },
    );
    expect(await until(() => fromOther.length > 0)).toBe(true);
    expect(jsonOf(await call2(fakes, "cap_with_token", { token: fromOther[0] }))).toMatchObject({
      got: { ok: false, error: revoked },
    });
    held.abort();
    expect(await otherCall).toMatchObject({ ok: false, error: { code: "cancelled" } });

    broker.ledger.flush();
    const rows = broker.store.sqlite
      .prepare("select * from cap_audit where rule = 'token' order by id")
      .all() as AuditRow[];
    expect(rows.map((r) => [r.session_id, r.extension, r.capability, r.decision, r.invocation_id])).toEqual([
      ["fakes", "fake", "report.emit", "denied", null],
      ["fakes", "fake", "report.emit", "denied", null],
      ["fakes", "fake", "report.emit", "denied", null],
    ]);
    await otherServes("after");
  });

  test("a protocol violation mid-call ends that call crashed; the other session's satellites are untouched", async () => {
    await otherServes("before");
    const otherInstance = text(await call2(other, "instance"));
    const fakeInstance = text(await call2(fakes, "instance"));

    for (const tool of ["result_unknown_id", "garbage", "truncated"]) {
      const r = await call2(fakes, tool);
      expect(r).toMatchObject({ ok: false, error: { code: "crashed" } });
      if (!r.ok) expect(r.error.msg).toContain(`Satellite 'fake' broke the protocol (`);
      await otherServes(`after ${tool}`);
      // The worker in the misbehaving session is untouched too.
      expect(text((await fakes.callTool("run", '{"text":"same session"}')).outcome)).toBe("ran: same session");
    }

    // The other session's fake is the same process; this session's was replaced and answers.
    expect(text(await call2(other, "instance"))).toBe(otherInstance);
    const fresh = text(await call2(fakes, "instance"));
    expect(fresh).toMatch(/^[a-z0-9]+$/);
    expect(fresh).not.toBe(fakeInstance);
    expect(text(await call2(fakes, "echo", { text: "fresh" }))).toBe("fresh");

    broker.ledger.flush();
    const outcomes = broker.store.sqlite
      .prepare(
        "select name, outcome from invocations where session_id = 'fakes' and name in ('result_unknown_id', 'garbage', 'truncated') order by id",
      )
      .all();
    expect(outcomes).toEqual([
      { name: "result_unknown_id", outcome: "crashed" },
      { name: "garbage", outcome: "crashed" },
      { name: "truncated", outcome: "crashed" },
    ]);
  });
});
