/** What the stand-in broker answers one capability call, in the shape of a `cap_result`. */
export type CapReply =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: { readonly code: string; readonly msg: string } };

/**
 * A refusal worded as the broker's: the message ends with the rule that
 * decided, `(rule: …)`, the same text its audit row carries.
 */
export function refused(code: string, rule: string, msg: string): CapReply {
  return { ok: false, error: { code, msg: `${msg} (rule: ${rule})` } };
}
