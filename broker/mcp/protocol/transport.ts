/**
 * The transport an engine speaks over: the SDK's own interface (types only,
 * erased at run time), so the SDK's Streamable HTTP and in-memory transports
 * plug in as they are and ours (stdio.ts) is held to the same shape.
 */
export type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
