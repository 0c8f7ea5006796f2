/**
 * A manifest's `[[secret]]` row: a credential the broker holds and injects
 * into requests under the rules it is bound to, so it never enters the jail
 * (docs/secrets.md). The schema says the shape; `secretProblems` what a schema
 * cannot: the rules are the manifest's own, one place to put the value, a
 * format with one `{}`, and no header the broker must own.
 */
import * as v from "valibot";
import { NEVER_FORWARDED } from "../egress/exchange.js";
import { OVERRIDE_HEADERS } from "../egress/method-guard.js";

/** At most this many secrets per extension, and rules per secret: a binding is read by a person. */
export const MAX_SECRETS = 16;
export const MAX_SECRET_RULES = 32;

export const SecretRow = v.strictObject({
  name: v.pipe(
    v.string(),
    v.regex(
      /^[a-z][a-z0-9_-]{0,63}$/,
      "expected a lowercase name (a-z, 0-9, _ and -, at most 64, starting with a letter)",
    ),
  ),
  description: v.pipe(v.string(), v.maxLength(4096)),
  /** Rules of its own `[net] allow`, by their text: the only requests it is sent with. */
  rules: v.pipe(
    v.array(v.pipe(v.string(), v.maxLength(2048))),
    v.minLength(1, "expected at least one of its [net] allow rules"),
    v.maxLength(MAX_SECRET_RULES),
  ),
  header: v.optional(
    v.pipe(
      v.string(),
      v.regex(
        /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/,
        "expected an HTTP header name (letters, digits, - and the other token characters, at most 64)",
      ),
    ),
  ),
  query: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^[A-Za-z0-9_.~-]{1,64}$/, "expected a query parameter name (letters, digits, _ . ~ -, at most 64)"),
    ),
  ),
  /** How the value is written: `{}` stands for it (`Bearer {}`). */
  format: v.optional(v.pipe(v.string(), v.maxLength(256)), "{}"),
});
export type SecretRow = v.InferOutput<typeof SecretRow>;

/** Headers a secret may not be sent as: the broker (or undici) owns them, or they change what was judged. */
const REFUSED_HEADERS = new Set([...NEVER_FORWARDED, ...OVERRIDE_HEADERS]);

/** Every problem of the `[[secret]]` rows past their schema, each naming the row and what to change. */
export function secretProblems(rows: readonly SecretRow[], allow: readonly string[], file: string): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  if (rows.length > MAX_SECRETS) problems.push(`${file}: secret: at most ${MAX_SECRETS} secrets`);
  for (const [i, row] of rows.entries()) {
    const at = `${file}: secret.${i}`;
    if (names.has(row.name)) problems.push(`${file}: secret '${row.name}' is declared twice`);
    names.add(row.name);
    for (const [j, rule] of row.rules.entries()) {
      if (!allow.includes(rule))
        problems.push(
          `${at}.rules.${j}: '${rule}' is not one of its [net] allow ` +
            `rules; a secret is bound to rules by their exact text`,
        );
    }
    if ((row.header === undefined) === (row.query === undefined))
      problems.push(`${at}: give exactly one of header = "…" or query = "…": where the broker puts the value`);
    const header = row.header?.toLowerCase();
    if (header !== undefined && (REFUSED_HEADERS.has(header) || header.startsWith("proxy-"))) {
      problems.push(
        `${at}.header: '${row.header}' is a header the broker sets or strips itself (hop-by-hop, Host, ` +
          `Content-Length, proxy and override headers); name the header the API reads the credential from`,
      );
    }
    if (row.query === "_method")
      problems.push(
        `${at}.query: '_method' overrides the request's method; name the parameter the API reads the credential from`,
      );
    if (row.format.split("{}").length !== 2)
      problems.push(`${at}.format: '${row.format}' must hold {} exactly once, where the value goes (e.g. "Bearer {}")`);
    if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(row.format))
      problems.push(`${at}.format: control characters (a line break) cannot be sent in a header or a query`);
  }
  return problems;
}

/** The value as sent: the format with `{}` replaced (a function, so `$` in the value is literal). */
export function formatted(format: string, value: string): string {
  return format.replace("{}", () => value);
}
