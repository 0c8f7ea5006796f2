/**
 * The hooks.json file format (Claude Code's, documented in docs/hooks.md):
 * its events and how they map to our bus events, its schema, and parsing it
 * into rows ready to run.
 */
import * as v from "valibot";
import type { BusEvent } from "./compose.js";
import { regexProblem } from "./hook-matcher.js";

export const THEIR_EVENTS = [
  "PreToolUse",
  "PostToolUse",
  "UserPromptSubmit",
  "Stop",
  "SessionStart",
  "PreCompact",
  "SessionEnd",
  "Notification",
] as const;
export type TheirEvent = (typeof THEIR_EVENTS)[number];

/** Claude Code's event names → our bus events (SessionEnd and Notification have no bus event). */
export const EVENT_MAP = {
  PreToolUse: "tool_call",
  PostToolUse: "tool_result",
  UserPromptSubmit: "before_agent_start",
  Stop: "agent_end",
  SessionStart: "session_start",
  PreCompact: "before_compact",
} as const satisfies Partial<Record<TheirEvent, BusEvent>>;
export type MappedEvent = keyof typeof EVENT_MAP;

/** Our bus events → Claude Code's (the inverse of `EVENT_MAP`). */
export function theirEventFor(busEvent: BusEvent): MappedEvent | undefined {
  for (const [theirs, ours] of Object.entries(EVENT_MAP) as [MappedEvent, BusEvent][]) {
    if (ours === busEvent) return theirs;
  }
  return undefined;
}

export class HooksFileError extends Error {
  override readonly name = "HooksFileError";
}

const Matcher = v.pipe(
  v.string("expected a string"),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const problem = regexProblem(dataset.value);
    if (problem !== null) addIssue({ message: `not a valid regular expression: ${problem}` });
  }),
);

const CommandRow = v.object({
  type: v.literal("command", 'expected "command" (only command hooks are supported)'),
  command: v.pipe(v.string("expected a string"), v.nonEmpty("expected a non-empty command")),
  timeout: v.optional(
    v.pipe(
      v.number("expected a number of seconds"),
      v.gtValue(0, "expected more than 0 seconds"),
      v.maxValue(3600, "expected at most 3600 seconds"),
    ),
  ),
  on_error: v.optional(v.picklist(["note", "block"], 'expected "note" or "block"')),
});

const Group = v.object({
  matcher: v.optional(Matcher),
  hooks: v.array(CommandRow, "expected an array of hooks"),
});

const Groups = v.optional(v.array(Group, "expected an array of matcher groups"));

/** The MCP server name Tether's tools are matched under when hooks.json names none. */
export const DEFAULT_MCP_SERVER = "tether";

const HooksFileSchema = v.object(
  {
    // Tether's own field: the name the harness gave `tether mcp` (Claude Code's
    // `mcp__<server>__<tool>`), so matchers written against that name match.
    mcp_server: v.optional(
      v.pipe(
        v.string("expected a string"),
        v.regex(/^[A-Za-z0-9_-]{1,64}$/, "expected an MCP server name (letters, digits, _ and -, at most 64)"),
      ),
    ),
    hooks: v.object(
      {
        PreToolUse: Groups,
        PostToolUse: Groups,
        UserPromptSubmit: Groups,
        Stop: Groups,
        SessionStart: Groups,
        PreCompact: Groups,
        SessionEnd: Groups,
        Notification: Groups,
      },
      "expected an object of events",
    ),
  },
  "expected an object",
);

/** One command hook, ready to run. */
export interface CommandHookRow {
  readonly event: TheirEvent;
  readonly matcher: string | undefined;
  readonly command: string;
  readonly timeoutS: number | undefined;
  readonly onError: "note" | "block";
  /** Where it sits in the file, e.g. `hooks.PreToolUse.0.hooks.1` (for messages). */
  readonly where: string;
}

export interface HooksFile {
  readonly file: string;
  /** The MCP server name tool matchers also match under (`mcp_server`, default `tether`). */
  readonly mcpServer: string;
  /** Every row, in file order. */
  readonly rows: readonly CommandHookRow[];
}

function describe(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue) ?? "(top level)";
  if (issue.kind === "schema" && issue.received === "undefined") return `${path}: missing; ${issue.message}`;
  return `${path}: ${issue.message}`;
}

/** Parses and validates hooks.json text; `file` is only for messages. */
export function parseHooksFile(text: string, file: string): HooksFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new HooksFileError(`${file}: not valid JSON: ${(err as Error).message}`);
  }
  const problems: string[] = [];
  if (typeof raw === "object" && raw !== null && !Array.isArray(raw)) {
    const hooks = (raw as Record<string, unknown>)["hooks"];
    if (typeof hooks === "object" && hooks !== null && !Array.isArray(hooks)) {
      for (const key of Object.keys(hooks)) {
        if (!(THEIR_EVENTS as readonly string[]).includes(key)) {
          problems.push(`hooks.${key}: unknown event "${key}" (expected one of ${THEIR_EVENTS.join(", ")})`);
        }
      }
    }
  }
  const parsed = v.safeParse(HooksFileSchema, raw, { abortEarly: false });
  if (!parsed.success) problems.push(...parsed.issues.map(describe));
  if (problems.length > 0 || !parsed.success) throw new HooksFileError(`${file}: ${problems.join("; ")}`);

  const rows: CommandHookRow[] = [];
  for (const event of THEIR_EVENTS) {
    const groups = parsed.output.hooks[event] ?? [];
    groups.forEach((group, g) => {
      group.hooks.forEach((hook, h) => {
        rows.push({
          event,
          matcher: group.matcher,
          command: hook.command,
          timeoutS: hook.timeout,
          onError: hook.on_error ?? "note",
          where: `hooks.${event}.${g}.hooks.${h}`,
        });
      });
    });
  }
  return { file, mcpServer: parsed.output.mcp_server ?? DEFAULT_MCP_SERVER, rows };
}
