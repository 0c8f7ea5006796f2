/**
 * Operator-written command hooks (`$TETHER_HOME/hooks.json`, Claude Code's format,
 * documented in docs/hooks.md) run for one bus event and answered as `HookAnswer`s,
 * so `compose()` treats them like any other extension's hooks (extension `hooks`).
 *
 * Where we differ from Claude Code's contract here (the other choices are listed in
 * `run-command-hook.ts`):
 * - Hooks run one at a time, in file order, and compose like the rest of the bus
 *   (first block / rewrite / halt wins; context and notes add up). Claude Code runs
 *   them in parallel ("deny > defer > ask > allow", "last to finish wins" for
 *   `updatedInput`); ours is deterministic.
 *
 * The file format is `hooks-file.ts`, matchers `hook-matcher.ts`, running one
 * hook and reading its answer `run-command-hook.ts`.
 */
import type { BusEvent, BusHook } from "./compose.js";
import { matches } from "./hook-matcher.js";
import { theirEventFor, type HooksFile, type CommandHookRow, type TheirEvent } from "./hooks-file.js";
import { runCommandHook, type CommandHookInput, type RunOptions } from "./run-command-hook.js";

/** Claude Code's events whose subject is a tool's name. */
export const TOOL_EVENTS: ReadonlySet<TheirEvent> = new Set(["PreToolUse", "PostToolUse"]);

/**
 * The name Claude Code shows for a tool served by the MCP server `server`:
 * `mcp__<server>__<tool>`, with every character outside letters, digits, `_`
 * and `-` made `_` (as Claude Code does to a dotted name).
 */
export function mcpToolName(server: string, tool: string): string {
  const safe = (name: string) => name.replace(/[^A-Za-z0-9_-]/g, "_");
  return `mcp__${safe(server)}__${safe(tool)}`;
}

/**
 * The name under which `row`'s matcher accepts `subject`, or null when it does
 * not. A tool is matched by its own name first, then by the name Claude Code
 * shows for it (`mcp__<server>__<tool>`), so a matcher copied from Claude
 * Code's settings matches the same tools here.
 */
export function matchedName(file: HooksFile, row: CommandHookRow, subject: string): string | null {
  if (row.event === "UserPromptSubmit" || row.event === "Stop") return subject;
  if (matches(row.matcher, subject)) return subject;
  if (TOOL_EVENTS.has(row.event)) {
    const mcp = mcpToolName(file.mcpServer, subject);
    if (matches(row.matcher, mcp)) return mcp;
  }
  return null;
}

/** The rows for one of Claude Code's events that accept `subject`, in file order, with the name each matched. */
function matchedRows(file: HooksFile, event: TheirEvent, subject: string): { row: CommandHookRow; name: string }[] {
  const found: { row: CommandHookRow; name: string }[] = [];
  for (const row of file.rows) {
    if (row.event !== event) continue;
    const name = matchedName(file, row, subject);
    if (name !== null) found.push({ row, name });
  }
  return found;
}

/** The rows for one of Claude Code's events whose matcher accepts `subject`, in file order. */
export function commandHooksForEvent(file: HooksFile, event: TheirEvent, subject: string): CommandHookRow[] {
  return matchedRows(file, event, subject).map((m) => m.row);
}

/**
 * The rows for one bus event whose matcher accepts `subject` (tool name, also as
 * `mcp__<server>__<tool>`; SessionStart `source`; PreCompact `manual|auto`;
 * ignored for UserPromptSubmit and Stop), in file order.
 */
export function commandHooksFor(file: HooksFile, busEvent: BusEvent, subject: string): CommandHookRow[] {
  const event = theirEventFor(busEvent);
  return event === undefined ? [] : commandHooksForEvent(file, event, subject);
}

/**
 * The matching command hooks of one bus event, as `BusHook`s for `compose()`. A
 * row that matched a tool only under its MCP name gets that name as `tool_name`
 * (what a script written for Claude Code compares against).
 */
export function commandBusHooks(
  file: HooksFile,
  busEvent: BusEvent,
  subject: string,
  input: CommandHookInput,
  options: RunOptions,
): BusHook[] {
  const event = theirEventFor(busEvent);
  if (event === undefined) return [];
  return matchedRows(file, event, subject).map(({ row, name }) => ({
    extension: "hooks",
    onError: row.onError,
    ask: () => runCommandHook(row, name === subject ? input : { ...input, tool_name: name }, options),
  }));
}
