/**
 * JSON-RPC's error codes as MCP uses them (the SDK's `ErrorCode` values), as
 * plain numbers: the SDK's enum lives in a module that builds every zod schema.
 */
export const ErrorCode = {
  /** The connection closed under a request. */
  ConnectionClosed: -32000,
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Too many requests of this client open at once (the code `tether serve` answers the same with). */
  Busy: -32001,
} as const;
