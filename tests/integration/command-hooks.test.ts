/**
 * Command hooks from a Claude Code style hooks.json, run as real shell scripts
 * (tests/integration/fixtures/hooks) and composed through the bus's `compose()`.
 */
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compose } from "../../broker/hooks/compose.js";
import { commandBusHooks, commandHooksFor } from "../../broker/hooks/command-hooks.js";
import { matches } from "../../broker/hooks/hook-matcher.js";
import { EVENT_MAP, type HooksFile, HooksFileError, parseHooksFile } from "../../broker/hooks/hooks-file.js";
import { runCommandHook, type CommandHookInput } from "../../broker/hooks/run-command-hook.js";
import { until } from "../support/wait.js";

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "hooks");
const script = (name: string, ...args: string[]) =>
  [JSON.stringify(join(FIXTURES, name)), ...args.map((a) => JSON.stringify(a))].join(" ");

let workspace: string;
beforeEach(() => {
  workspace = realpathSync(mkdtempSync(join(tmpdir(), "tether-hooks-")));
});
afterEach(() => rmSync(workspace, { recursive: true, force: true }));

const options = () => ({ cwd: workspace, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, defaultTimeoutS: 10 });
const input = (fields: Record<string, unknown> = {}): CommandHookInput => ({
  session_id: "s-1",
  transcript_path: "",
  cwd: workspace,
  permission_mode: "default",
  ...fields,
});
const toolInput = (tool = "Bash", args: unknown = { command: "ls" }) =>
  input({ tool_name: tool, tool_input: args, tool_use_id: "call-1" });

type Row = {
  matcher?: string;
  hooks: { type: "command"; command: string; timeout?: number; on_error?: "note" | "block" }[];
};
function hooksFile(hooks: Record<string, Row[]>): HooksFile {
  return parseHooksFile(JSON.stringify({ hooks }), "hooks.json");
}
const cmd = (command: string, extra: { timeout?: number; on_error?: "note" | "block" } = {}) => ({
  type: "command" as const,
  command,
  ...extra,
});

async function toolCall(file: HooksFile, tool = "Bash", args: unknown = { command: "ls" }) {
  return compose("tool_call", commandBusHooks(file, "tool_call", tool, toolInput(tool, args), options()));
}

test("the event mapping is Claude Code's names onto our bus events", () => {
  expect(EVENT_MAP).toEqual({
    PreToolUse: "tool_call",
    PostToolUse: "tool_result",
    UserPromptSubmit: "before_agent_start",
    Stop: "agent_end",
    SessionStart: "session_start",
    PreCompact: "before_compact",
  });
});

test("a PreToolUse script that exits 2 blocks the call with its stderr", async () => {
  const out = await toolCall(hooksFile({ PreToolUse: [{ matcher: "Bash", hooks: [cmd(script("block.sh"))] }] }));
  expect(out.block).toEqual({ reason: "rm -rf is not allowed here", by: "hooks" });
  expect(out.notes).toEqual([]);
});

test("JSON permissionDecision deny blocks with permissionDecisionReason", async () => {
  const out = await toolCall(hooksFile({ PreToolUse: [{ hooks: [cmd(script("deny-json.sh"))] }] }));
  expect(out.block?.reason).toBe("writes outside the workspace are denied");
});

test("updatedInput rewrites the arguments (re-validated by the bus) and additionalContext adds context", async () => {
  const file = hooksFile({ PreToolUse: [{ hooks: [cmd(script("rewrite.sh"))] }] });
  const out = await toolCall(file);
  expect(out.block).toBeNull();
  expect(out.rewrite).toEqual({ arguments: { command: "ls -la" }, by: "hooks" });
  expect(out.context).toEqual(["rewrote ls"]);

  const refused = await compose("tool_call", commandBusHooks(file, "tool_call", "Bash", toolInput(), options()), {
    validateArguments: () => "command must not have flags",
  });
  expect(refused.rewrite).toBeNull();
  expect(refused.notes).toEqual(["hooks's rewrite was refused: command must not have flags"]);
});

test("continue: false halts with stopReason", async () => {
  const out = await toolCall(hooksFile({ PreToolUse: [{ hooks: [cmd(script("halt.sh"))] }] }));
  expect(out.halt).toEqual({ reason: "budget exhausted", by: "hooks" });
  expect(out.block).toBeNull();
});

test("ask is deferred with a note (no interactive ask); systemMessage is a note", async () => {
  const out = await toolCall(hooksFile({ PreToolUse: [{ hooks: [cmd(script("ask.sh"))] }] }));
  expect(out.block).toBeNull();
  expect(out.notes).toHaveLength(2);
  expect(out.notes[0]).toContain("careful with Bash");
  expect(out.notes[1]).toMatch(/asked to ask.*deferred.*please confirm/);
});

test("JSON that does not parse is a note naming the hook", async () => {
  const out = await toolCall(hooksFile({ PreToolUse: [{ hooks: [cmd(script("bad-json.sh"))] }] }));
  expect(out.block).toBeNull();
  expect(out.notes).toHaveLength(1);
  expect(out.notes[0]).toContain("bad-json.sh");
  expect(out.notes[0]).toContain("does not parse");
});

test("plain stdout is context on UserPromptSubmit and SessionStart, a note on PreToolUse", async () => {
  const file = hooksFile({
    UserPromptSubmit: [{ matcher: "ignored-for-prompts", hooks: [cmd(script("say.sh", "today is Sunday"))] }],
    SessionStart: [{ matcher: "startup", hooks: [cmd(script("say.sh", "welcome back"))] }],
    PreToolUse: [{ hooks: [cmd(script("say.sh", "just saying"))] }],
  });
  const prompt = await compose(
    "before_agent_start",
    commandBusHooks(file, "before_agent_start", "", input({ prompt: "hi" }), options()),
  );
  expect(prompt.context).toEqual(["today is Sunday"]);
  expect(prompt.notes).toEqual([]);

  const start = await compose(
    "session_start",
    commandBusHooks(file, "session_start", "startup", input({ source: "startup" }), options()),
  );
  expect(start.context).toEqual(["welcome back"]);
  const resumed = commandBusHooks(file, "session_start", "resume", input({ source: "resume" }), options());
  expect(resumed).toHaveLength(0);

  const tool = await toolCall(file);
  expect(tool.context).toEqual([]);
  expect(tool.notes).toHaveLength(1);
  expect(tool.notes[0]).toContain("just saying");
});

test("exit 2 per event: Stop keeps going, UserPromptSubmit refuses, PostToolUse tells the model, PreCompact only notes", async () => {
  const file = hooksFile({
    Stop: [{ hooks: [cmd(script("block.sh"))] }],
    UserPromptSubmit: [{ hooks: [cmd(script("block.sh"))] }],
    PostToolUse: [{ hooks: [cmd(script("block.sh"))] }],
    PreCompact: [{ matcher: "auto", hooks: [cmd(script("block.sh"))] }],
  });
  const stop = await compose(
    "agent_end",
    commandBusHooks(file, "agent_end", "", input({ stop_hook_active: false }), options()),
  );
  expect(stop.block?.reason).toBe("rm -rf is not allowed here");
  const prompt = await compose(
    "before_agent_start",
    commandBusHooks(file, "before_agent_start", "", input({ prompt: "x" }), options()),
  );
  expect(prompt.block?.reason).toBe("rm -rf is not allowed here");
  const post = await compose(
    "tool_result",
    commandBusHooks(file, "tool_result", "Bash", { ...toolInput(), tool_response: "ok" }, options()),
  );
  expect(post.block).toBeNull();
  expect(post.context).toEqual(["rm -rf is not allowed here"]);
  const compact = await compose(
    "before_compact",
    commandBusHooks(file, "before_compact", "auto", input({ trigger: "auto", custom_instructions: "" }), options()),
  );
  expect(compact.block).toBeNull();
  expect(compact.notes).toHaveLength(1);
  expect(compact.notes[0]).toMatch(/cannot be vetoed.*rm -rf is not allowed here/);
  expect(commandBusHooks(file, "before_compact", "manual", input(), options())).toHaveLength(0);
});

test("exit 1 is a failure: noted (fail-open), or a block with on_error block", async () => {
  const open = await toolCall(hooksFile({ PreToolUse: [{ hooks: [cmd(script("fail.sh"))] }] }));
  expect(open.block).toBeNull();
  expect(open.notes).toHaveLength(1);
  expect(open.notes[0]).toMatch(/^hooks's hook failed: .*fail\.sh.*exited with 1: linter crashed/);
  expect(open.trace.map((t) => t.answer)).toEqual(["failed"]);

  const closed = await toolCall(
    hooksFile({ PreToolUse: [{ hooks: [cmd(script("fail.sh"), { on_error: "block" })] }] }),
  );
  expect(closed.block?.reason).toMatch(/exited with 1/);
});

/** How many processes (not zombies) are in process group `pgid`, read from /proc. */
function liveInGroup(pgid: number): number {
  let n = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so split after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(pgrp) === pgid && state !== "Z") n++;
  }
  return n;
}

test("a script past its 1 s timeout fails (note), or blocks with on_error block; the process group is killed", async () => {
  // slow.sh sleeps 30 s: each answer below comes only because the 1 s timeout cut it off.
  const open = await toolCall(hooksFile({ PreToolUse: [{ hooks: [cmd(script("slow.sh"), { timeout: 1 })] }] }));
  expect(open.block).toBeNull();
  expect(open.notes).toHaveLength(1);
  expect(open.notes[0]).toMatch(/slow\.sh.*timed out after 1 s/);
  // The whole group is killed: the script and its `sleep 30` go (waited on with a guard well under the 30 s).
  const group = Number(readFileSync(join(workspace, "slow.pid"), "utf8"));
  expect(group).toBeGreaterThan(1);
  await until(`process group ${group} to be gone`, () => liveInGroup(group) === 0, 20_000);

  const closed = await toolCall(
    hooksFile({
      PreToolUse: [
        { hooks: [cmd(script("slow.sh"), { timeout: 1 })], matcher: "*" },
        { hooks: [cmd(script("say.sh"), { on_error: "block" })] },
      ],
    }),
  );
  expect(closed.block).toBeNull(); // the slow hook's on_error is note; the second hook succeeds
  const blocking = await toolCall(
    hooksFile({ PreToolUse: [{ hooks: [cmd(script("slow.sh"), { timeout: 1, on_error: "block" })] }] }),
  );
  expect(blocking.block?.reason).toMatch(/timed out after 1 s/);
});

test("a missing command (127) is a note", async () => {
  const out = await toolCall(hooksFile({ PreToolUse: [{ hooks: [cmd("/nonexistent/hook-that-is-not-there.sh")] }] }));
  expect(out.block).toBeNull();
  expect(out.notes).toHaveLength(1);
  expect(out.notes[0]).toMatch(/could not start \(exit 127\)/);
});

test("the script reads its JSON input on stdin, runs in the workspace with CLAUDE_PROJECT_DIR and no TTY", async () => {
  const file = hooksFile({ PreToolUse: [{ matcher: "Write", hooks: [cmd(script("capture.sh"))] }] });
  const [row] = commandHooksFor(file, "tool_call", "Write");
  expect(row).toBeDefined();
  const answer = await runCommandHook(row!, toolInput("Write", { path: "a.txt", content: "x" }), options());
  expect(answer).toEqual({ kind: "verdict", verdict: {} });
  const stdin = JSON.parse(readFileSync(join(workspace, "stdin.json"), "utf8")) as Record<string, unknown>;
  expect(stdin["tool_name"]).toBe("Write");
  expect(stdin["tool_input"]).toEqual({ path: "a.txt", content: "x" });
  expect(stdin["hook_event_name"]).toBe("PreToolUse");
  expect(stdin["session_id"]).toBe("s-1");
  expect(stdin["cwd"]).toBe(workspace);
  const env = readFileSync(join(workspace, "env.txt"), "utf8").split("\n");
  expect(env).toContain(`CLAUDE_PROJECT_DIR=${workspace}`);
  expect(env).toContain(`TETHER_PROJECT_DIR=${workspace}`);
  expect(env).toContain(`PWD=${workspace}`);
  expect(env).toContain("TTY=no");
});

test("matchers: exact names with |, unanchored regex, * and omitted match all", () => {
  expect(matches("Bash|Write", "Bash")).toBe(true);
  expect(matches("Bash|Write", "Write")).toBe(true);
  expect(matches("Bash|Write", "BashX")).toBe(false);
  expect(matches("Bash", "bash")).toBe(false);
  expect(matches("^mcp__", "mcp__github__search")).toBe(true);
  expect(matches("^mcp__", "Bash")).toBe(false);
  expect(matches("mcp__.*__search", "x_mcp__github__search_y")).toBe(true);
  expect(matches("Edit.*", "edit")).toBe(false);
  expect(matches("*", "anything")).toBe(true);
  expect(matches("", "anything")).toBe(true);
  expect(matches(undefined, "anything")).toBe(true);

  const file = hooksFile({
    PreToolUse: [
      { matcher: "Bash|Write", hooks: [cmd("exact")] },
      { matcher: "^mcp__", hooks: [cmd("regex")] },
      { matcher: "*", hooks: [cmd("star")] },
      { hooks: [cmd("omitted")] },
    ],
    PostToolUse: [{ matcher: "Bash", hooks: [cmd("post")] }],
  });
  const names = (tool: string) => commandHooksFor(file, "tool_call", tool).map((r) => r.command);
  expect(names("Bash")).toEqual(["exact", "regex", "star", "omitted"]);
  expect(names("mcp__fs__read")).toEqual(["regex", "star", "omitted"]);
  // Every Tether tool is also mcp__tether__<name>, the name Claude Code shows: `^mcp__` matches Bash and Read.
  expect(names("Read")).toEqual(["regex", "star", "omitted"]);
  expect(commandHooksFor(file, "tool_result", "Bash").map((r) => r.command)).toEqual(["post"]);
  expect(commandHooksFor(file, "context", "Bash")).toEqual([]);
});

test("file order composition: the first block wins, notes add up", async () => {
  const file = hooksFile({
    PreToolUse: [
      { hooks: [cmd(script("say.sh", "first note")), cmd(script("fail.sh"))] },
      {
        matcher: "Bash",
        hooks: [cmd(script("deny-json.sh")), cmd(script("block.sh")), cmd(script("say.sh", "last note"))],
      },
    ],
  });
  const out = await toolCall(file);
  expect(out.block).toEqual({ reason: "writes outside the workspace are denied", by: "hooks" });
  expect(out.notes).toHaveLength(3);
  expect(out.notes[0]).toContain("first note");
  expect(out.notes[1]).toContain("exited with 1");
  expect(out.notes[2]).toContain("last note");
  expect(out.trace.map((t) => t.answer)).toEqual(["notes", "failed", "block", "proceed", "notes"]); // the second block loses: traced as proceed
  expect(out.block?.reason).not.toBe("rm -rf is not allowed here");
});

test("parse errors name the field path; unknown events and bad regexes are load errors", () => {
  const fails = (value: unknown) => {
    try {
      parseHooksFile(typeof value === "string" ? value : JSON.stringify(value), "hooks.json");
    } catch (err) {
      expect(err).toBeInstanceOf(HooksFileError);
      return (err as Error).message;
    }
    throw new Error("expected a parse error");
  };
  expect(fails("{nope")).toMatch(/^hooks\.json: not valid JSON/);
  expect(fails({ hooks: { PreToolUze: [] } })).toMatch(/hooks\.PreToolUze: unknown event "PreToolUze"/);
  expect(fails({ hooks: { PreToolUse: [{ hooks: [{ type: "command" }] }] } })).toMatch(
    /hooks\.PreToolUse\.0\.hooks\.0\.command: missing/,
  );
  expect(fails({ hooks: { PreToolUse: [{ hooks: [{ type: "prompt", command: "x" }] }] } })).toMatch(
    /hooks\.PreToolUse\.0\.hooks\.0\.type: expected "command"/,
  );
  expect(fails({ hooks: { Stop: [{ hooks: [{ type: "command", command: "x", timeout: "10" }] }] } })).toMatch(
    /hooks\.Stop\.0\.hooks\.0\.timeout: expected a number/,
  );
  expect(fails({ hooks: { Stop: [{ hooks: [{ type: "command", command: "x", on_error: "explode" }] }] } })).toMatch(
    /hooks\.Stop\.0\.hooks\.0\.on_error: expected "note" or "block"/,
  );
  expect(fails({ hooks: { PreToolUse: [{ matcher: "mcp__(", hooks: [] }] } })).toMatch(
    /hooks\.PreToolUse\.0\.matcher: not a valid regular expression/,
  );
  expect(fails({ hooks: { SessionStart: {} } })).toMatch(/hooks\.SessionStart: expected an array/);
  expect(fails({})).toMatch(/hooks: missing/);

  const ok = parseHooksFile(
    JSON.stringify({ hooks: { Notification: [{ hooks: [cmd("n", { timeout: 5, on_error: "block" })] }] } }),
    "hooks.json",
  );
  expect(ok.rows).toEqual([
    {
      event: "Notification",
      matcher: undefined,
      command: "n",
      timeoutS: 5,
      onError: "block",
      where: "hooks.Notification.0.hooks.0",
    },
  ]);
});
