/**
 * The built-in `hooks` extension: operator-written command hooks from
 * `$TETHER_HOME/hooks.json` (Claude Code's format), asked through the same bus
 * as every extension's hooks. Off by default: an operator turns it on with
 * `tether session enable hooks` (globally or per session).
 *
 * It runs on the host, not in a jail: the scripts are the operator's own, like
 * a shell alias. The file is re-read when it changes (by mtime and size), so an
 * edit applies to the next event; a file that does not parse makes the
 * extension inactive at the next activation or reload, with the parse error.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { BUILTIN_HOOKS_NAME } from "../install/manifest.js";
import type { BusEvent, BusHook } from "./compose.js";
import { commandBusHooks, commandHooksForEvent } from "./command-hooks.js";
import { parseHooksFile, type HooksFile } from "./hooks-file.js";
import { runCommandHook, type CommandHookInput } from "./run-command-hook.js";

export { BUILTIN_HOOKS_NAME };

/** Asked before any installed extension (lower comes first): the operator's word first. */
export const BUILTIN_HOOKS_PRIORITY = -1_000_000;

/** The events the built-in extension answers (those Claude Code's format has a name for). */
export const BUILTIN_HOOK_EVENTS: readonly BusEvent[] = [
  "session_start",
  "before_agent_start",
  "tool_call",
  "tool_result",
  "agent_end",
  "before_compact",
];

export interface SessionFacts {
  readonly sessionId: string;
  readonly workspace: string;
}

/**
 * The environment hook scripts get: a few of the broker process's own variables,
 * nothing secret by default. This is the command hooks' environment, not the
 * broker's configuration: the scripts are the operator's, run on the host as a
 * shell would run them, so they see the PATH, HOME and locale the operator's
 * broker runs with (the one read of process.env outside broker/cli/ that
 * tests/unit/layering.test.ts allows).
 */
function hookEnvironment(home: string): Record<string, string | undefined> {
  const keep = ["PATH", "HOME", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR"];
  const env: Record<string, string | undefined> = { TETHER_HOME: home };
  for (const key of keep) if (process.env[key] !== undefined) env[key] = process.env[key];
  return env;
}

export class BuiltinHooks {
  readonly file: string;
  readonly #home: string;
  #cached: { key: string; parsed: HooksFile | null } | null = null;

  constructor(home: string) {
    this.#home = home;
    this.file = join(home, "hooks.json");
  }

  /**
   * The parsed file, or null when there is none. Throws a HooksFileError naming
   * the field when it does not parse (activation turns that into the reason).
   */
  load(): HooksFile | null {
    let key: string;
    try {
      const st = statSync(this.file);
      key = `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch {
      this.#cached = { key: "missing", parsed: null };
      return null;
    }
    if (this.#cached?.key === key) return this.#cached.parsed;
    const parsed = parseHooksFile(readFileSync(this.file, "utf8"), this.file);
    this.#cached = { key, parsed };
    return parsed;
  }

  /** How many command hooks the file holds (for status). */
  count(): number {
    try {
      return this.load()?.rows.length ?? 0;
    } catch {
      return 0;
    }
  }

  /** The matching command hooks for one bus event, as bus hooks (none when the file is gone or broken). */
  hooksFor(event: BusEvent, payload: Readonly<Record<string, unknown>>, facts: SessionFacts): BusHook[] {
    let file: HooksFile | null;
    try {
      file = this.load();
    } catch (err) {
      // Edited into something broken mid-session: say so once per event instead of running stale rows.
      const reason = (err as Error).message;
      return [{ extension: BUILTIN_HOOKS_NAME, onError: "note", ask: async () => ({ kind: "failed", reason }) }];
    }
    if (file === null) return [];
    const { subject, input } = claudeInput(event, payload, facts);
    if (input === null) return [];
    return commandBusHooks(file, event, subject, input, { cwd: facts.workspace, env: hookEnvironment(this.#home) });
  }

  /** Runs the SessionEnd hooks (notes only: a session end cannot be blocked). */
  async sessionEnd(facts: SessionFacts, reason: string): Promise<string[]> {
    let file: HooksFile | null;
    try {
      file = this.load();
    } catch (err) {
      return [(err as Error).message];
    }
    if (file === null) return [];
    const notes: string[] = [];
    const input: CommandHookInput = { ...common(facts), reason };
    for (const row of commandHooksForEvent(file, "SessionEnd", reason)) {
      const answer = await runCommandHook(row, input, { cwd: facts.workspace, env: hookEnvironment(this.#home) });
      if (answer.kind === "failed") notes.push(answer.reason);
      else if (answer.kind === "verdict") notes.push(...(answer.verdict.notes ?? []));
    }
    return notes;
  }
}

function common(facts: SessionFacts): CommandHookInput {
  return { session_id: facts.sessionId, transcript_path: "", cwd: facts.workspace, permission_mode: "default" };
}

/** Our payload as Claude Code's stdin JSON, and what the matcher is tested against. */
function claudeInput(
  event: BusEvent,
  p: Readonly<Record<string, unknown>>,
  facts: SessionFacts,
): { subject: string; input: CommandHookInput | null } {
  const base = common(facts);
  const text = (value: unknown) => (typeof value === "string" ? value : "");
  switch (event) {
    case "tool_call":
      return {
        subject: text(p["tool"]),
        input: { ...base, tool_name: p["tool"], tool_input: p["arguments"], tool_use_id: p["call_id"] },
      };
    case "tool_result":
      return {
        subject: text(p["tool"]),
        input: {
          ...base,
          tool_name: p["tool"],
          tool_input: p["arguments"],
          tool_use_id: p["call_id"],
          tool_response: p["result"],
        },
      };
    case "before_agent_start":
      return { subject: "", input: { ...base, prompt: p["prompt"] } };
    case "agent_end":
      return { subject: "", input: { ...base, stop_hook_active: typeof p["held"] === "number" && p["held"] > 0 } };
    case "session_start":
      return { subject: text(p["source"]), input: { ...base, source: p["source"] } };
    case "before_compact": {
      const trigger = p["reason"] === "requested" ? "manual" : "auto";
      return { subject: trigger, input: { ...base, trigger, custom_instructions: "" } };
    }
    default:
      return { subject: "", input: null };
  }
}
