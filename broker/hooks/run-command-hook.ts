/**
 * Running one operator-written command hook and reading its answer as a
 * `HookAnswer`.
 *
 * Choices where we differ from, or had to pin down, Claude Code's contract:
 * - Default timeout: 60 s per hook (`DEFAULT_TIMEOUT_S`; Claude Code's is 600). On
 *   a timeout the whole process group is killed (SIGTERM, then SIGKILL after 1 s).
 * - stdout and stderr are each kept to the first 64 KiB (`MAX_OUTPUT_BYTES`); the
 *   rest is read and dropped. JSON cut off that way no longer parses, which is a note.
 * - `permissionDecision: "ask"` / `"defer"`: we have no interactive ask, so the call
 *   proceeds and a note says the decision was deferred.
 * - `updatedInput` becomes an argument rewrite; the bus re-validates it against the
 *   tool's schema and refuses (with a note) one that does not validate.
 * - PreCompact cannot veto on our bus (`before_compact` never blocks): exit 2,
 *   `decision: "block"` or `continue: false` there become notes.
 * - SessionStart / SessionEnd cannot block: exit 2 there is a note.
 * - PostToolUse exit 2 (and `decision: "block"`): the tool already ran, so the
 *   reason becomes context the model reads.
 * - Any exit other than 0 and 2, a command that cannot start (127), or a timeout is
 *   `failed`: the bus notes it (fail-open), or blocks when the row says
 *   `"on_error": "block"` (fail-closed, our extension to the format).
 * - The hook runs as `sh -c <command>` in the session's workspace, in its own
 *   process group and session (no TTY, stdin is the JSON input), with the given
 *   environment only (`extendEnv: false`) plus `CLAUDE_PROJECT_DIR` and
 *   `TETHER_PROJECT_DIR` set to the workspace.
 */
import type { HookAnswer, Verdict } from "./compose.js";
import type { CommandHookRow } from "./hooks-file.js";
import { HeldBytes } from "../../jail-runtime/wire/held-bytes.js";
import { bufferOf } from "../base/buffer-of.js";

export const DEFAULT_TIMEOUT_S = 60;
export const MAX_OUTPUT_BYTES = 64 * 1024;

/** The JSON a hook reads on stdin; `hook_event_name` is set from the row. */
export interface CommandHookInput {
  readonly session_id: string;
  readonly transcript_path: string;
  readonly cwd: string;
  readonly permission_mode: string;
  readonly [field: string]: unknown;
}

export interface RunOptions {
  /** The session's workspace: the hook's cwd and `CLAUDE_PROJECT_DIR`. */
  readonly cwd: string;
  /** The hook's whole environment (the broker's is not inherited). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Seconds, for rows without `timeout`; default `DEFAULT_TIMEOUT_S`. */
  readonly defaultTimeoutS?: number;
  /** Per stream; default `MAX_OUTPUT_BYTES`. */
  readonly maxOutputBytes?: number;
}

interface Ran {
  readonly exitCode: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
  readonly timedOut: boolean;
  readonly startError: string | undefined;
}

async function run(row: CommandHookRow, stdin: string, options: RunOptions): Promise<Ran> {
  const limit = options.maxOutputBytes ?? MAX_OUTPUT_BYTES;
  const timeoutMs = Math.round((row.timeoutS ?? options.defaultTimeoutS ?? DEFAULT_TIMEOUT_S) * 1000);
  // Loaded at the first command hook: a broker with none never loads execa (~50 ms).
  const { execa } = await import("execa");
  const child = execa("sh", ["-c", row.command], {
    cwd: options.cwd,
    env: { ...options.env, CLAUDE_PROJECT_DIR: options.cwd, TETHER_PROJECT_DIR: options.cwd },
    extendEnv: false,
    input: stdin,
    stdout: "pipe",
    stderr: "pipe",
    buffer: false,
    reject: false,
    detached: true, // own process group and session: no TTY, and a timeout kills the whole group
    cleanup: true,
    forceKillAfterDelay: false,
    encoding: "buffer",
  });
  const collect = (stream: NodeJS.ReadableStream | null) => {
    // One buffer however the command splits its writes (`HeldBytes`); what passes `limit` is dropped.
    const held = new HeldBytes(limit);
    stream?.on("data", (chunk: Buffer) => {
      held.append(chunk.subarray(0, limit - held.size));
    });
    return () => bufferOf(held.view()).toString("utf8");
  };
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);

  let timedOut = false;
  const killGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  let hardKill: NodeJS.Timeout | undefined;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup("SIGTERM");
    hardKill = setTimeout(() => killGroup("SIGKILL"), 1000);
  }, timeoutMs);
  try {
    const result = await child;
    const startError =
      result.exitCode === undefined && !timedOut && result.signal === undefined ? result.shortMessage : undefined;
    return { exitCode: result.exitCode, stdout: stdout(), stderr: stderr(), timedOut, startError };
  } finally {
    clearTimeout(timer);
    if (hardKill) clearTimeout(hardKill);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** Folds what a non-vetoing event cannot do (block, halt, context) into notes. */
function asNotes(verdict: Verdict, label: string): Verdict {
  const notes = [...(verdict.notes ?? [])];
  if (verdict.halt !== undefined) notes.push(`${label} asked to stop (ignored here): ${verdict.halt}`);
  if (verdict.block !== undefined) notes.push(`${label} asked to block (cannot block here): ${verdict.block}`);
  if (verdict.context !== undefined) notes.push(`${label}: ${verdict.context}`);
  return notes.length > 0 ? { notes } : {};
}

function fromJson(row: CommandHookRow, out: Record<string, unknown>, label: string): Verdict {
  const notes: string[] = [];
  let block: string | undefined;
  let halt: string | undefined;
  let context: string | undefined;
  let args: unknown;

  if (out["continue"] === false) halt = str(out["stopReason"]) ?? `${label} stopped the session`;
  const systemMessage = str(out["systemMessage"]);
  if (systemMessage !== undefined) notes.push(`${label}: ${systemMessage}`);

  const decisionReason = str(out["reason"]);
  if (out["decision"] === "block") {
    const reason = decisionReason ?? `blocked by ${label}`;
    if (row.event === "PostToolUse")
      context = reason; // the tool already ran: the model reads the reason
    else block = reason;
  }

  const specific = out["hookSpecificOutput"];
  if (isRecord(specific)) {
    const permission = specific["permissionDecision"];
    const why = str(specific["permissionDecisionReason"]);
    if (row.event === "PreToolUse" && typeof permission === "string") {
      if (permission === "deny" || permission === "block") {
        block ??= why ?? decisionReason ?? `denied by ${label}`;
      } else if (permission === "ask" || permission === "defer") {
        notes.push(
          `${label} asked to ${permission}; there is no interactive ask, so the decision was deferred and the ` +
            `call proceeds${why ? `: ${why}` : ""}`,
        );
      } else if (permission !== "allow" && permission !== "approve") {
        notes.push(`${label} answered an unknown permissionDecision "${permission}" (ignored)`);
      }
    }
    if (row.event === "PreToolUse" && specific["updatedInput"] !== undefined) args = specific["updatedInput"];
    const extra = str(specific["additionalContext"]);
    if (extra !== undefined) context = context === undefined ? extra : `${context}\n${extra}`;
  }

  return {
    ...(block !== undefined ? { block } : {}),
    ...(halt !== undefined ? { halt } : {}),
    ...(context !== undefined ? { context } : {}),
    ...(args !== undefined ? { arguments: args } : {}),
    ...(notes.length > 0 ? { notes } : {}),
  };
}

function fromExit2(row: CommandHookRow, stderr: string, label: string): Verdict {
  const reason = stderr.trim() || `${label} exited with 2 and no reason on stderr`;
  switch (row.event) {
    case "PreToolUse":
    case "UserPromptSubmit":
    case "Stop":
      return { block: reason };
    case "PostToolUse":
      return { context: reason };
    case "PreCompact":
      return { notes: [`${label} asked to block compaction (compaction cannot be vetoed): ${reason}`] };
    case "SessionStart":
    case "SessionEnd":
    case "Notification":
      return { notes: [`${label} exited with 2 (cannot block ${row.event}): ${reason}`] };
  }
}

/** Runs one command hook with `input` on stdin and maps its outcome to a `HookAnswer`. */
export async function runCommandHook(
  row: CommandHookRow,
  input: CommandHookInput,
  options: RunOptions,
): Promise<HookAnswer> {
  const label = `hook "${row.command}" (${row.where})`;
  const ran = await run(row, JSON.stringify({ ...input, hook_event_name: row.event }), options);
  const stderrTail = ran.stderr.trim() ? `: ${ran.stderr.trim().slice(0, 1000)}` : "";

  if (ran.timedOut) {
    return {
      kind: "failed",
      reason: `${label} timed out after ${row.timeoutS ?? options.defaultTimeoutS ?? DEFAULT_TIMEOUT_S} s`,
    };
  }
  if (ran.startError !== undefined) return { kind: "failed", reason: `${label} could not start: ${ran.startError}` };
  if (ran.exitCode === undefined) return { kind: "failed", reason: `${label} was killed${stderrTail}` };
  if (ran.exitCode === 127) return { kind: "failed", reason: `${label} could not start (exit 127)${stderrTail}` };
  if (ran.exitCode === 2) {
    const verdict = fromExit2(row, ran.stderr, label);
    return { kind: "verdict", verdict: row.event === "PreCompact" ? asNotes(verdict, label) : verdict };
  }
  if (ran.exitCode !== 0) return { kind: "failed", reason: `${label} exited with ${ran.exitCode}${stderrTail}` };

  const stdout = ran.stdout.trim();
  let verdict: Verdict;
  if (stdout === "") {
    verdict = {};
  } else if (stdout.startsWith("{")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(stdout);
    } catch (err) {
      return {
        kind: "verdict",
        verdict: { notes: [`${label} printed JSON that does not parse: ${(err as Error).message}`] },
      };
    }
    verdict = isRecord(parsed)
      ? fromJson(row, parsed, label)
      : { notes: [`${label} printed JSON that is not an object`] };
  } else if (row.event === "UserPromptSubmit" || row.event === "SessionStart") {
    verdict = { context: stdout };
  } else {
    verdict = { notes: [`${label}: ${stdout}`] };
  }
  return { kind: "verdict", verdict: row.event === "PreCompact" ? asNotes(verdict, label) : verdict };
}
