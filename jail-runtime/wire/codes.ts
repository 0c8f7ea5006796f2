/**
 * Every error code that travels on the wire, in one place.
 *
 * The first five are the author SDK's (`jail-runtime/ext/`), the next
 * three are minted by the serving loop, the rest by the broker.
 */
export const ErrorCode = {
  /** The extension refused, as written: text the model reads and repairs. */
  refused: "refused",
  /** The tool asked for is not served; the message names it and the sorted list served. */
  unknownTool: "unknown_tool",
  /** An event with no handler: nothing happened. */
  unhandled: "unhandled",
  /** The manifest declared one event and the module answers another. */
  mismatchedHook: "mismatched_hook",
  /** Arguments that are not JSON, or do not match what the tool decodes; names the field. */
  badArguments: "bad_arguments",
  /** The serving loop was asked for a kind it does not serve. */
  badKind: "bad_kind",
  /** A second invocation arrived while one was open. */
  busy: "busy",
  /** The tool threw, or the satellite died mid-call. */
  crashed: "crashed",
  /** The invocation passed its deadline; the satellite was killed. */
  timeout: "timeout",
  /** A capability call was refused; the message names the rule. */
  denied: "denied",
  /** A capability call carried a token that is not the open invocation's. */
  tokenRevoked: "token_revoked",
  /** A capability was allowed but its target could not be reached (network error, deadline). */
  unreachable: "unreachable",
  /** The caller cancelled the invocation. */
  cancelled: "cancelled",
  /** `model.complete` is exclusive work: another run of the session is active, or the session is closing. */
  busySession: "busy_session",
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export const ERROR_CODES: readonly ErrorCode[] = Object.values(ErrorCode);

/**
 * The codes a satellite's own answer may carry: the SDK's, the serving loop's, and a
 * capability's refusal passed on by a tool that did not catch it. Everything else — the
 * broker's `timeout` and `cancelled`, the ledger's outcomes, anything made up — is the
 * broker's to choose: such an answer is `crashed`.
 */
export const SATELLITE_ANSWER_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  ErrorCode.refused,
  ErrorCode.unknownTool,
  ErrorCode.unhandled,
  ErrorCode.mismatchedHook,
  ErrorCode.badArguments,
  ErrorCode.badKind,
  ErrorCode.busy,
  ErrorCode.crashed,
  ErrorCode.denied,
  ErrorCode.tokenRevoked,
  ErrorCode.unreachable,
  ErrorCode.busySession,
]);

/** The longest error message kept from a satellite's answer. */
export const MAX_ANSWER_MESSAGE = 4096;
