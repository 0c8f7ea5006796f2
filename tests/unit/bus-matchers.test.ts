/**
 * The bus and `[[hook]] match`, over a fake session: a hook whose matcher
 * leaves the subject out costs nothing (no `callHook`, no trace row), and a
 * tool no hook matches takes the unhooked path (nothing composed).
 */
import { waitKey } from "../../broker/base/waits.js";
import { jest } from "@jest/globals";
import type { CapCallEvent } from "../../broker/caps/context.js";
import { SessionBus } from "../../broker/sessions/bus.js";
import { hookedToolCall, type HookedCallParts } from "../../broker/sessions/hooked-call.js";

type Row = { event: string; onError: "note" | "block"; match: readonly string[] | undefined };

const KNOWN: Record<string, Row[]> = {
  picky: [
    { event: "tool_call", onError: "note", match: ["fs_*"] },
    { event: "tool_result", onError: "note", match: ["echo"] },
    { event: "cap_call", onError: "note", match: ["kv.put", "net.fetch *.wanted.example"] },
  ],
  never: [
    { event: "tool_call", onError: "block", match: ["nothing_*"] },
    { event: "tool_result", onError: "block", match: ["nope"] },
    { event: "cap_call", onError: "block", match: ["kv.delete"] },
  ],
  worker: [],
};

function fakeSession(known: Record<string, Row[]> = KNOWN) {
  const asked: string[] = [];
  const traced: unknown[] = [];
  const ran: string[] = [];
  const scope = {
    id: "s1",
    callHook: jest.fn(async (extension: string, event: string) => {
      asked.push(`${extension}:${event}`);
      return { outcome: { ok: true, value: "{}" }, invocationId: 1 };
    }),
    callTool: jest.fn(async (_extension: string, tool: string) => {
      ran.push(tool);
      return { ok: true, value: { content: [], terminate: false } };
    }),
  };
  const active = {
    closed: false,
    refresh: () => {},
    applied: {
      plan: { active: Object.keys(known), tools: new Map(["echo", "fs_read", "other"].map((t) => [t, "worker"])) },
      known: new Map(
        Object.entries(known).map(([name, hooks]) => [name, { name, builtin: false, hooks, installed: null }]),
      ),
    },
  };
  const ledger = { trace: (rows: readonly unknown[]) => traced.push(...rows), begin: () => 9, finish: () => {} };
  const bus = new SessionBus(scope as never, "/w", ledger as never, active as never, {} as never);
  const parts = { scope, active, bus, ledger, toolArgs: { check: () => ({ ok: true }) } } as unknown as HookedCallParts;
  return { bus, parts, asked, traced, ran };
}

const cap = (capability: string, target: string, host?: string): CapCallEvent => ({
  sessionId: "s1",
  invocationId: 3,
  extension: "worker",
  capability,
  target,
  within: "tool:fetch",
  chain: [waitKey("s1", "worker")],
  ...(host !== undefined
    ? { request: { method: "GET", scheme: "https", host, port: 443, path: "/", rule: "r", addresses: [] } }
    : {}),
});

describe("hooked(event, subject)", () => {
  test("true only when some active hook's matcher takes the subject", () => {
    const { bus } = fakeSession();
    expect(bus.hooked("tool_call", { name: "fs_read" })).toBe(true);
    expect(bus.hooked("tool_call", { name: "echo" })).toBe(false);
    expect(bus.hooked("tool_result", { name: "echo" })).toBe(true);
    expect(bus.hooked("cap_call", { name: "net.fetch", host: "api.wanted.example" })).toBe(true);
    expect(bus.hooked("cap_call", { name: "net.fetch", host: "elsewhere.example" })).toBe(false);
  });

  test("without a subject, as before: whether anything hooks the event", () => {
    const { bus } = fakeSession();
    expect(bus.hooked("tool_call")).toBe(true);
    expect(bus.hooked("session_start")).toBe(false);
  });

  test("a hook with no matcher takes every subject", () => {
    const { bus } = fakeSession({ all: [{ event: "tool_call", onError: "note", match: undefined }] });
    expect(bus.hooked("tool_call", { name: "anything" })).toBe(true);
  });
});

describe("tool calls", () => {
  test("a tool no hook matches takes the unhooked path: nothing composed, no hook asked, no trace", async () => {
    const { bus, parts, asked, traced, ran } = fakeSession();
    const compose = jest.spyOn(bus, "compose");
    const report = await hookedToolCall(parts, "other", "{}");
    expect(report.outcome.ok).toBe(true);
    expect(ran).toEqual(["other"]);
    expect(compose).not.toHaveBeenCalled();
    expect(asked).toEqual([]);
    expect(traced).toEqual([]);
  });

  test("tool_call matches fs_read: only that hook is asked, only it is traced", async () => {
    const { parts, asked, traced } = fakeSession();
    const report = await hookedToolCall(parts, "fs_read", "{}");
    expect(asked).toEqual(["picky:tool_call"]);
    expect(report.trace.map((t) => t.extension)).toEqual(["picky"]);
    expect(traced).toEqual([expect.objectContaining({ event: "tool_call", extension: "picky", subject: "fs_read" })]);
  });

  test("tool_result alone matches echo: the tool_call hooks are not asked", async () => {
    const { parts, asked } = fakeSession();
    await hookedToolCall(parts, "echo", "{}");
    expect(asked).toEqual(["picky:tool_result"]);
  });
});

describe("cap_call", () => {
  test("asked for a matching host or capability; skipped, untraced, otherwise", async () => {
    const { bus, asked, traced } = fakeSession();
    await bus.capCall(cap("net.fetch", "https://elsewhere.example/x", "elsewhere.example"));
    await bus.capCall(cap("kv.get", "settings"));
    expect(asked).toEqual([]);
    expect(traced).toEqual([]);
    await bus.capCall(cap("net.fetch", "https://api.wanted.example/x", "api.wanted.example"));
    await bus.capCall(cap("kv.put", "settings"));
    expect(asked).toEqual(["picky:cap_call", "picky:cap_call"]);
    expect(traced).toHaveLength(2);
  });
});
