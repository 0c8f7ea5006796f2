/**
 * The broker's catalogue of coded errors. Wire codes (what a caller sees as an
 * invocation's answer) come from the shared wire; the codes below are the
 * broker's own failures, each with a message that says what to do next.
 */
import { ErrorCode as WireCode, ERROR_CODES as WIRE_CODES } from "../../jail-runtime/wire/codes.js";

export { WireCode, WIRE_CODES };

export const BrokerCode = {
  /** bubblewrap is missing and the operator did not choose the insecure mode. */
  sandboxUnavailable: "sandbox_unavailable",
  /** The Deno binary could not be found or run. */
  denoUnavailable: "deno_unavailable",
  /** The satellite did not say hello in time, or exited first. */
  bootFailed: "boot_failed",
  /** The hello's boot token was wrong. */
  bootTokenMismatch: "boot_token_mismatch",
  /** What the artifact serves is not what the manifest declares. */
  servedMismatch: "served_mismatch",
  /** The satellite broke the wire protocol and was disconnected. */
  protocolViolation: "protocol_violation",
  /** An install step failed: manifest, bundle or an import outside the extension. */
  installFailed: "install_failed",
  /** No extension of that name is installed. */
  notInstalled: "not_installed",
  /** The extension is not approved, was revoked, or changed since its approval. */
  notApproved: "not_approved",
  /** An approval asked for something the manifest does not request. */
  approvalInvalid: "approval_invalid",
  /** A migration failed at approval: nothing was applied and no approval recorded. */
  migrationFailed: "migration_failed",
  /** The satellite slot is closed and takes no more calls. */
  closed: "closed",
  /** A hook refused the call (or withheld its result); the message is the hook's reason and names the extension. */
  blocked: "blocked",
  /** A session with that id is already open on this broker (close it first, or use another id). */
  sessionInUse: "session_in_use",
  /**
   * The tool or command is not served by any active extension
   * of the session; the message names the inactive one and why.
   */
  inactive: "inactive",
  /**
   * A sign-in (`tether login`, `login.start`), a refresh or a logout
   * failed; the message names the endpoint and the OAuth error code.
   */
  loginFailed: "login_failed",
  /**
   * A fleet's host has not heard the fleet's store within the staleness bound
   * (policy.toml [fleet] max_staleness_ms): it refuses calls until it hears again.
   */
  fleetStale: "fleet_stale",
  /**
   * The session's lease is another host's now (this host's ran out): the
   * session is closed here for good; the message names the host holding it.
   */
  sessionMoved: "session_moved",
} as const;
export type BrokerCode = (typeof BrokerCode)[keyof typeof BrokerCode];
export const BROKER_CODES: readonly BrokerCode[] = Object.values(BrokerCode);

/** A broker failure with a stable code. */
export class TetherError extends Error {
  override readonly name = "TetherError";
  constructor(
    readonly code: BrokerCode | WireCode,
    message: string,
  ) {
    super(message);
  }
}
