/**
 * An MCP error for a request handler to throw. The server (protocol/engine.ts,
 * as the SDK's) answers a thrown error with its `code`, `message` and `data`
 * as they are, and the SDK's
 * client puts `MCP error <code>: ` before the message it receives; the SDK's
 * own `McpError` has that prefix in its message already, so a client read it
 * twice (`MCP error -32002: MCP error -32002: Resource not found…`).
 */
export class McpFailure extends Error {
  override readonly name = "McpFailure";

  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}
