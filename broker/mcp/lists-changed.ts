/**
 * Tells one MCP client its lists changed (after a reload): tools and prompts,
 * the two lists a session's active set decides. A client already gone is no
 * failure.
 */
import type { McpEngine } from "./protocol/engine.js";

export async function announceListsChanged(server: McpEngine): Promise<void> {
  await Promise.all([server.sendToolListChanged(), server.sendPromptListChanged()]).catch(() => {});
}
