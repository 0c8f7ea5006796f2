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

/** The rows for one of Claude Code's events whose matcher accepts `subject`, in file order. */
export function commandHooksForEvent(file: HooksFile, event: TheirEvent, subject: string): CommandHookRow[] {
  const ignoresMatcher = event === "UserPromptSubmit" || event === "Stop";
  return file.rows.filter((row) => row.event === event && (ignoresMatcher || matches(row.matcher, subject)));
}

/**
 * The rows for one bus event whose matcher accepts `subject` (tool name; SessionStart
 * `source`; PreCompact `manual|auto`; ignored for UserPromptSubmit and Stop), in file order.
 */
export function commandHooksFor(file: HooksFile, busEvent: BusEvent, subject: string): CommandHookRow[] {
  const event = theirEventFor(busEvent);
  return event === undefined ? [] : commandHooksForEvent(file, event, subject);
}

/** The matching command hooks of one bus event, as `BusHook`s for `compose()`. */
export function commandBusHooks(
  file: HooksFile,
  busEvent: BusEvent,
  subject: string,
  input: CommandHookInput,
  options: RunOptions,
): BusHook[] {
  return commandHooksFor(file, busEvent, subject).map((row) => ({
    extension: "hooks",
    onError: row.onError,
    ask: () => runCommandHook(row, input, options),
  }));
}
