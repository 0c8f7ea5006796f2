/**
 * The MCP protocol versions this server speaks: the SDK's (1.32.2) list, kept
 * here so the stdio path never loads the SDK; a unit test compares them with
 * the SDK's own, so an SDK upgrade that adds one is noticed.
 */

/** The newest version: answered to a client that asks for one not listed below. */
export const LATEST_PROTOCOL_VERSION = "2025-11-25";

/** Every version a client may ask for and get, newest first. */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [
  LATEST_PROTOCOL_VERSION,
  "2025-06-18",
  "2025-03-26",
  "2024-11-05",
  "2024-10-07",
];

/**
 * The version `initialize` answers: the one the client asked for when supported, else the
 * latest (the client then decides whether to go on).
 */
export function negotiatedVersion(requested: string): string {
  return SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
}
