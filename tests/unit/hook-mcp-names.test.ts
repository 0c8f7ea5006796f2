/**
 * hooks.json matchers copied from Claude Code: Claude Code shows a tool of
 * `tether mcp` as mcp__<server>__<tool>, so every matcher form its users write
 * for that name must match the tool here (both tool events, every server name
 * spelling, dotted and hyphenated tool names), must not match under another
 * server, and a group that matches none of the tools is a warning naming the fix.
 */
import { commandHooksFor, mcpToolName } from "../../broker/hooks/command-hooks.js";
import { DEFAULT_MCP_SERVER, parseHooksFile, type HooksFile } from "../../broker/hooks/hooks-file.js";
import { matcherWarnings } from "../../broker/hooks/matcher-warnings.js";

const TOOLS = ["fetch_quote", "run", "Read", "quote.fetch", "build-all"];
const SERVERS = [DEFAULT_MCP_SERVER, "my-tools", "my_srv", "S3"];
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&");

/**
 * Every way a Claude Code user names one tool of one server in a matcher, and
 * what else it names: only this tool, every tool of this server, or this tool
 * under any server.
 */
function matcherForms(server: string, tool: string): [string, "tool" | "server" | "any server"][] {
  const name = mcpToolName(server, tool);
  const prefix = `mcp__${server}__`;
  return [
    [name, "tool"],
    [`${name}|mcp__${server}__other_tool`, "tool"],
    [`^${escape(name)}$`, "tool"],
    [`^${escape(prefix)}`, "server"],
    [`${escape(prefix)}.*`, "server"],
    [`mcp__.*__${escape(name.slice(prefix.length))}$`, "any server"],
  ];
}

function file(matcher: string, server: string | undefined, event = "PreToolUse"): HooksFile {
  const body = {
    ...(server === undefined ? {} : { mcp_server: server }),
    hooks: { [event]: [{ matcher, hooks: [{ type: "command", command: "true" }] }] },
  };
  return parseHooksFile(JSON.stringify(body), "hooks.json");
}

const busEvent = { PreToolUse: "tool_call", PostToolUse: "tool_result" } as const;

describe.each(["PreToolUse", "PostToolUse"] as const)("%s", (event) => {
  for (const server of SERVERS) {
    for (const tool of TOOLS) {
      test.each(matcherForms(server, tool))(`server ${server}, tool ${tool}: %s (names %s)`, (matcher, names) => {
        const named = server === DEFAULT_MCP_SERVER ? undefined : server;
        const f = file(matcher, named, event);
        expect(commandHooksFor(f, busEvent[event], tool)).toHaveLength(1);
        // Under another server's name it is not this tool.
        const elsewhere = commandHooksFor(file(matcher, "elsewhere", event), busEvent[event], tool);
        expect(elsewhere).toHaveLength(names === "any server" ? 1 : 0);
        // Loaded with the tool there: no warning; with only another tool: one, unless it names that one too.
        expect(matcherWarnings(f, [tool, "unrelated"])).toEqual([]);
        expect(matcherWarnings(f, ["unrelated"])).toHaveLength(names === "server" ? 0 : 1);
      });
    }
  }
});

test("the MCP name is Claude Code's: characters outside [A-Za-z0-9_-] become _", () => {
  expect(mcpToolName("tether", "quote.fetch")).toBe("mcp__tether__quote_fetch");
  expect(mcpToolName("my tools", "a.b-c")).toBe("mcp__my_tools__a_b-c");
});

test("a tool's own name still matches, and is the name preferred when both would", () => {
  const f = file("fetch_quote", undefined);
  expect(commandHooksFor(f, "tool_call", "fetch_quote")).toHaveLength(1);
  expect(commandHooksFor(f, "tool_call", "other")).toHaveLength(0);
});

test("a warning names the server a matcher was written for and what to set", () => {
  const [warning] = matcherWarnings(file("^mcp__github__", undefined), ["fetch_quote"]);
  expect(warning).toContain('hooks.PreToolUse.0.matcher "^mcp__github__" matches none of the tools here (fetch_quote)');
  expect(warning).toContain('set "mcp_server": "github" in hooks.json');
  const [underscored] = matcherWarnings(file("mcp__my_srv__x", undefined), ["fetch_quote"]);
  expect(underscored).toContain('"mcp_server": "my_srv"');
  // No tools yet: nothing to judge against.
  expect(matcherWarnings(file("^mcp__github__", undefined), [])).toEqual([]);
});

test("PreCompact matchers that accept neither trigger are warned about; others are not", () => {
  expect(matcherWarnings(file("manual", undefined, "PreCompact"), [])).toEqual([]);
  expect(matcherWarnings(file("Manual", undefined, "PreCompact"), [])[0]).toContain('neither "manual" nor "auto"');
});

test("mcp_server must be a name Claude Code accepts", () => {
  expect(() => file("x", "has space")).toThrow(/mcp_server: expected an MCP server name/);
});
