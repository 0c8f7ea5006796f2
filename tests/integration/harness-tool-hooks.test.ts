/**
 * A harness's own tools (a shell, a file editor it runs itself) before the
 * session's hooks: `session.fire("tool_call" | "tool_result", …)` about a tool
 * no extension serves asks the same hooks `callTool` asks, through real
 * jailed satellites — a block, a rewrite and a substitute come back for the
 * harness to apply, `match` globs select by the tool's name, the ledger
 * traces each verdict under it — and is refused, naming `callTool`, about a
 * tool of the session (whose hooks run around the call itself).
 */
import { rmSync } from "node:fs";
import type { Session } from "../../broker/sessions/session.js";
import { openHookSession, type HookSession } from "../support/hook-session.js";
import { writeExtensions } from "./support/write-extensions.js";

const EXTENSIONS = {
  warden: {
    manifest: `
[[tool]]
name = "lookup"
description = "A tool of the session."
parameters = { type = "object", properties = {} }

[[hook]]
event = "tool_call"
match = ["bash", "write", "ls"]

[[hook]]
event = "tool_result"
`,
    code: `import { hook, outcome, proceed, text } from "@tether/ext";
export const tools = { lookup: () => outcome([text("looked up")]) };
export const hooks = {
  tool_call: hook("tool_call", (call) => {
    const args = call.arguments as Record<string, unknown>;
    if (call.tool === "bash" && String(args["command"]).includes("rm -rf")) return { block: "no rm -rf here" };
    if (call.tool === "write") return { arguments: { ...args, path: "/sandbox/" + String(args["path"]) } };
    if (call.tool === "ls") return { result: "a.txt b.txt", context: "listed by the warden" };
    return proceed;
  }),
  tool_result: hook("tool_result", (result) =>
    JSON.stringify(result.result).includes("password") ? { block: "the output holds a password" } : proceed,
  ),
};
`,
  },
} as const;

let fixtures: string;
let opened: HookSession;
let session: Session;

beforeAll(async () => {
  fixtures = writeExtensions("tether-harness-tools-ext-", EXTENSIONS);
  opened = await openHookSession("tether-harness-tools-", fixtures, Object.keys(EXTENSIONS), "harness-tools-1");
  ({ session } = opened);
}, 120_000);

afterAll(async () => {
  await opened?.close();
  rmSync(fixtures, { recursive: true, force: true });
});

const call = (tool: string, args: unknown) =>
  session.fire("tool_call", { tool, call_id: `c-${tool}`, arguments: args });

test("a block, a rewrite and a substitute about the harness's own tools come back to apply", async () => {
  const blocked = await call("bash", { command: "rm -rf /" });
  expect(blocked.block).toEqual({ reason: "no rm -rf here", by: "warden" });
  expect((await call("bash", { command: "ls" })).block).toBeNull();

  const rewritten = await call("write", { path: "notes.md", content: "x" });
  expect(rewritten.block).toBeNull();
  expect(rewritten.rewrite).toEqual({ arguments: { path: "/sandbox/notes.md", content: "x" }, by: "warden" });

  const substituted = await call("ls", {});
  expect(substituted.result).toEqual({ value: "a.txt b.txt", by: "warden" });
  expect(substituted.context).toEqual(["listed by the warden"]);
});

test("match selects by the harness tool's name: a tool it does not name asks no satellite", async () => {
  const other = await call("read", { path: "x" });
  expect(other.trace).toEqual([]);
  expect(other.block).toBeNull();
});

test("tool_result about a harness tool may withhold its output", async () => {
  const result = (output: string) =>
    session.fire("tool_result", {
      tool: "bash",
      call_id: "c-r",
      arguments: { command: "cat .env" },
      ok: true,
      result: [{ type: "text", text: output }],
      started_ms: 1,
      finished_ms: 2,
    });
  expect((await result("password=hunter2")).block).toEqual({ reason: "the output holds a password", by: "warden" });
  expect((await result("nothing to see")).block).toBeNull();
});

test("each verdict is traced in the ledger under the tool's name", async () => {
  await call("bash", { command: "rm -rf /tmp/x" });
  opened.broker.ledger.flush();
  const rows = opened.broker.store.sqlite
    .prepare("select event, subject, answer from hook_traces where session_id = ? and subject = 'bash' order by id")
    .all("harness-tools-1") as { event: string; subject: string; answer: string }[];
  expect(rows.length).toBeGreaterThan(0);
  expect(rows.at(-1)).toEqual({ event: "tool_call", subject: "bash", answer: "block" });
});

test("about a tool of the session it is refused, naming callTool: its hooks run around the call itself", async () => {
  await expect(call("lookup", {})).rejects.toThrow(
    "event 'tool_call': 'lookup' is a tool of this session (served by 'warden'): call it with callTool (tool.call)",
  );
  // The payload is checked like any event's.
  await expect(session.fire("tool_call", { tool: "bash" } as never)).rejects.toThrow("event 'tool_call':");
});
