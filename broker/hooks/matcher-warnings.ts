/**
 * hooks.json matchers that can match nothing: a group whose tool matcher
 * accepts none of the tools there are (by their own names or as
 * `mcp__<server>__<tool>`), or whose PreCompact matcher accepts neither
 * `manual` nor `auto`. Such a group never runs, silently; these warnings say
 * so when the file is loaded (activation, `tether doctor`), with what to write.
 */
import { matchedName, TOOL_EVENTS } from "./command-hooks.js";
import type { CommandHookRow, HooksFile } from "./hooks-file.js";

const COMPACT_TRIGGERS = ["manual", "auto"];
const SHOWN_TOOLS = 12;

/** `hooks.PreToolUse.1` of `hooks.PreToolUse.1.hooks.0`: a group's rows share its matcher. */
function groupOf(row: CommandHookRow): string {
  return row.where.replace(/\.hooks\.\d+$/, "");
}

/** The MCP server a matcher names (`mcp__github__…`), when it names one. */
function serverNamed(matcher: string): string | null {
  // A server's name may hold single underscores (`my_srv`); `__` ends it.
  return /mcp__([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*)/.exec(matcher)?.[1] ?? null;
}

/**
 * One warning per matcher group that matches none of `tools` (skipped when
 * `tools` is empty: there is nothing to match yet) or no PreCompact trigger.
 */
export function matcherWarnings(file: HooksFile, tools: readonly string[]): string[] {
  const warnings: string[] = [];
  const seen = new Set<string>();
  for (const row of file.rows) {
    const group = groupOf(row);
    if (seen.has(group) || row.matcher === undefined) continue;
    seen.add(group);
    const said = `${file.file}: ${group}.matcher ${JSON.stringify(row.matcher)}`;
    if (TOOL_EVENTS.has(row.event) && tools.length > 0) {
      if (tools.some((tool) => matchedName(file, row, tool) !== null)) continue;
      const shown = tools.slice(0, SHOWN_TOOLS).join(", ") + (tools.length > SHOWN_TOOLS ? ", …" : "");
      const server = serverNamed(row.matcher);
      const hint =
        server !== null && server !== file.mcpServer
          ? ` It names the MCP server "${server}", and Tether's tools are matched as mcp__${file.mcpServer}__<tool>:` +
            ` if your harness calls tether mcp "${server}", set "mcp_server": "${server}" in hooks.json.`
          : ` Each tool is matched by its name and as mcp__${file.mcpServer}__<name>.`;
      warnings.push(`${said} matches none of the tools here (${shown}), so its hooks never run.${hint}`);
    } else if (row.event === "PreCompact" && !COMPACT_TRIGGERS.some((t) => matchedName(file, row, t) !== null)) {
      warnings.push(`${said} matches neither "manual" nor "auto" (PreCompact's triggers), so its hooks never run.`);
    }
  }
  return warnings;
}
