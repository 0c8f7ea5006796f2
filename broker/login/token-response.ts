/**
 * A token endpoint's successful answer (RFC 6749 §5.1), checked field by field,
 * into what is stored. The answer's values are never put in a message: a
 * failure names the field and what was expected.
 */
import * as v from "valibot";
import { secretValueProblem } from "../secrets/store.js";
import type { LoginRow } from "../install/login-row.js";
import { endpointName, OAuthError } from "./endpoint.js";
import type { StoredLogin } from "./token-store.js";

/** Ten years: a longer lifetime is a server's mistake, not a token's. */
const MAX_LIFETIME_S = 10 * 365 * 24 * 3600;
const Seconds = v.pipe(
  v.union([v.number(), v.pipe(v.string(), v.regex(/^\d{1,10}$/), v.transform(Number))]),
  v.number(),
  v.integer(),
  v.minValue(0),
  v.maxValue(MAX_LIFETIME_S),
);
/** A token is a secret the broker injects: it passes what `tether secret set` asks of one (secrets/store.ts). */
const Token = v.pipe(
  v.string(),
  v.check(
    (value) => secretValueProblem(value) === null,
    (issue) => `a value fit to be sent as a secret (${secretValueProblem(String(issue.input)) ?? ""})`,
  ),
);

const TokenAnswer = v.object({
  access_token: Token,
  token_type: v.pipe(v.string(), v.minLength(1), v.maxLength(64)),
  expires_in: v.optional(Seconds),
  refresh_token: v.optional(Token),
  scope: v.optional(v.pipe(v.string(), v.maxLength(4096))),
});

/** A successful answer's issues, with the values left out (valibot's messages quote what they received). */
function safeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return (
    issues
      // A check's message is the broker's own words (secretValueProblem never quotes the value).
      .map(
        (issue) =>
          `${v.getDotPath(issue) ?? "(top level)"}: ` +
          `expected ${issue.type === "check" ? issue.message : (issue.expected ?? "another value")}`,
      )
      .join("; ")
      .slice(0, 300)
  );
}

/**
 * What to store from a token answer. `previous` is the sign-in being refreshed:
 * a refresh answer without a refresh token keeps the old one (RFC 6749 §6).
 */
export function tokensFrom(
  answer: Record<string, unknown>,
  row: LoginRow,
  extension: string,
  now: number,
  previous: StoredLogin | null,
): StoredLogin {
  const parsed = v.safeParse(TokenAnswer, answer);
  if (!parsed.success) {
    throw new OAuthError(
      endpointName(row.token_endpoint),
      null,
      `the token endpoint ${endpointName(row.token_endpoint)} answered no usable token: ${safeIssues(parsed.issues)}`,
    );
  }
  const t = parsed.output;
  return {
    version: 1,
    extension,
    login: row.name,
    flow: row.flow,
    access_token: t.access_token,
    token_type: t.token_type,
    refresh_token: t.refresh_token ?? previous?.refresh_token ?? null,
    expires_at: t.expires_in === undefined ? null : now + t.expires_in * 1000,
    signed_in_at: previous?.signed_in_at ?? now,
    obtained_at: now,
    scope: t.scope ?? previous?.scope ?? null,
  };
}
