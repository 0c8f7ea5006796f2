/**
 * The session's jailed tools as pi tools: the manifest's JSON Schema handed to
 * pi as it is (pi validates a plain JSON Schema as it does TypeBox's), each
 * call a `tool.call` with pi's tool call id, partials as pi's streaming
 * updates, pi's abort as `call.cancel`.
 */
import { piToolResult } from "./tool-result.js";

/** Partials kept for the streaming view: the last ones, so a long run does not grow it without end. */
const MAX_PARTIAL_LINES = 50;

/**
 * Registers `tools` with pi, but never over one of pi's built-in tools (a
 * jailed `read` would silently replace pi's): those are left out, said why.
 * @param {import("@mariozechner/pi-coding-agent").ExtensionAPI} pi
 * @param {import("./tether-session.js").TetherSession} session
 * @param {import("./answers.js").ToolList} tools
 * @returns {{ registered: string[], skipped: string[] }} the names registered, and what was left out (for the user)
 */
export function registerJailedTools(pi, session, tools) {
  const builtin = new Set(
    pi
      .getAllTools()
      .filter((t) => t.sourceInfo.source === "builtin")
      .map((t) => t.name),
  );
  const skipped = [];
  const registered = [];
  for (const tool of tools) {
    if (builtin.has(tool.name)) {
      skipped.push(`'${tool.name}' of '${tool.extension}' is not offered: pi has a built-in tool of that name`);
      continue;
    }
    registered.push(tool.name);
    pi.registerTool({
      name: tool.name,
      label: `${tool.name} (tether: ${tool.extension})`,
      description: tool.description,
      promptSnippet: tool.description.split("\n")[0]?.slice(0, 200),
      // A JSON Schema, not a TypeBox value: pi's validator takes both.
      parameters: /** @type {any} */ (tool.parameters),
      async execute(toolCallId, params, signal, onUpdate) {
        /** @type {string[]} */
        const partials = [];
        const onPartial = (/** @type {string} */ text) => {
          partials.push(text);
          if (partials.length > MAX_PARTIAL_LINES) partials.shift();
          onUpdate?.({ content: [{ type: "text", text: partials.join("\n") }], details: { partial: true } });
        };
        const report = await session.callTool(tool.name, params, toolCallId, { onPartial, signal });
        return piToolResult(report);
      },
    });
  }
  return { registered, skipped };
}
