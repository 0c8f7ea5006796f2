/** The MCP SDK's own client over stdio, on a server it spawns: how bench/vs-mcp.ts drives every MCP server. */
import type { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

export interface McpPeer {
  readonly client: Client;
  /** The server process (under `node bin/tether.js`, the node running the CLI). */
  readonly pid: number;
  /** The end of what the server wrote on stderr. */
  readonly stderr: () => string;
  /** Closes stdin and waits for the server to exit (the SDK sends SIGTERM, then SIGKILL, if it lingers). */
  readonly close: () => Promise<void>;
}

/** Spawns `command args` (env: the SDK's safe default set plus `env`), connects and initializes. */
export async function startMcp(
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  cwd: string,
): Promise<McpPeer> {
  const transport = new StdioClientTransport({ command, args: [...args], env, cwd, stderr: "pipe" });
  let stderr = "";
  (transport.stderr as Readable).on(
    "data",
    (chunk: Buffer) => (stderr = (stderr + chunk.toString("utf8")).slice(-4000)),
  );
  const client = new Client({ name: "tether-bench", version: "1.0.0" });
  try {
    await client.connect(transport);
  } catch (err) {
    await transport.close();
    throw new Error(`${command} ${args.join(" ")} did not start: ${(err as Error).message}\n${stderr}`);
  }
  const pid = transport.pid;
  if (pid === null) throw new Error("the MCP server has no pid");
  return { client, pid, stderr: () => stderr, close: () => client.close() };
}

/** One `tools/call` of `echo`; rejects unless the answer is the text, whole. */
export async function mcpEcho(client: Client, args: { text: string }): Promise<void> {
  const result = await client.callTool({ name: "echo", arguments: args });
  const block = (result.content as { type: string; text?: string }[] | undefined)?.[0];
  if (result.isError === true || block?.text?.length !== args.text.length) {
    throw new Error(`MCP echo answered something else: ${JSON.stringify(result).slice(0, 300)}`);
  }
}
