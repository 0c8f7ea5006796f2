/**
 * The secret a `net.fetch` names (docs/secrets.md): its approved binding,
 * checked once before the first hop; then, for each hop after it is judged and
 * hooked, what is sent — the value added to the header or query only when the
 * hop's judged rule is one the secret is bound to. The value is read from the
 * operator's store at that moment and never leaves this module except in the
 * request on the wire; the `Redactor` learns each value used, to take it out of
 * what comes back.
 */
import type { SecretBinding } from "../registry/grants.js";
import { formatted } from "../install/secret-row.js";
import { Redactor } from "../secrets/redact.js";
import { secretValueProblem, SecretStoreError } from "../secrets/store.js";
import type { Exchange } from "../egress/exchange.js";
import type { CallScope } from "./context.js";

export interface FetchSecret {
  readonly binding: SecretBinding;
  readonly redactor: Redactor;
}

/** What one hop sends; `carried` when the secret is in it. */
export interface SentHop {
  readonly url: URL;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly carried: boolean;
}

export interface SecretRefusal {
  readonly rule: string;
  readonly msg: string;
}

/** The approved binding of secret `name`, or why this request may not name it. */
export function fetchSecret(
  scope: CallScope,
  name: string,
  headers: ReadonlyArray<readonly [string, string]>,
  url: URL,
): FetchSecret | SecretRefusal {
  const ext = scope.info.extension;
  const binding = scope.ctx.grants().secrets.find((b) => b.name === name);
  if (binding === undefined) {
    return {
      rule: `secret:${name} unknown`,
      msg:
        `net.fetch refused: '${ext}' has no approved secret '${name}' (a secret is declared in a [[secret]] row ` +
        `of the manifest and approved with it)`,
    };
  }
  if (binding.header !== undefined) {
    const header = binding.header.toLowerCase();
    if (headers.some(([n]) => String(n).toLowerCase() === header)) {
      return {
        rule: `secret:${name} header`,
        msg:
          `net.fetch refused: the request names secret '${name}', which the broker sends as ` +
          `the ${binding.header} header; do not set ${binding.header} yourself`,
      };
    }
  } else if (binding.query !== undefined && url.searchParams.has(binding.query)) {
    return {
      rule: `secret:${name} query`,
      msg:
        `net.fetch refused: the request names secret '${name}', which the broker sends as the query parameter ` +
        `'${binding.query}'; leave it out of the URL`,
    };
  }
  return { binding, redactor: new Redactor() };
}

/**
 * What the hop under judged `rule` sends. A first hop outside the secret's
 * rules is refused; a redirect hop outside them is sent without it (a
 * redirect to a CDN or another origin never carries the credential).
 */
export async function sentHop(
  scope: CallScope,
  secret: FetchSecret,
  exchange: Exchange,
  rule: string,
): Promise<SentHop | SecretRefusal> {
  const { binding, redactor } = secret;
  const ext = scope.info.extension;
  const plain = { url: exchange.url, headers: exchange.headers, carried: false };
  if (!binding.rules.includes(rule)) {
    if (exchange.redirects > 0) return plain;
    return {
      rule: `secret:${binding.name} not bound to ${rule}`,
      msg:
        `net.fetch refused: secret '${binding.name}' is sent only ` +
        `under ${binding.rules.map((r) => `'${r}'`).join(", ")}, and this URL is under '${rule}'`,
    };
  }
  let value: string | null;
  if (scope.env.logins.fills(ext, binding.name)) {
    // Filled by a sign-in the broker ran: the token store answers (refreshing a due token), never the jail.
    value = await scope.env.logins.currentToken(ext, binding.name);
    if (value === null) {
      return {
        rule: `secret:${binding.name} not signed in`,
        msg:
          `net.fetch refused: secret '${binding.name}' comes from a sign-in that is not done or has expired; the ` +
          `operator must run: tether login ${ext}`,
      };
    }
    return inject(binding, redactor, exchange, value);
  }
  try {
    value = scope.env.secrets.get(ext, binding.name);
    const problem = value === null ? null : secretValueProblem(value);
    if (problem !== null)
      throw new SecretStoreError(
        `the stored value of ${ext}'s secret '${binding.name}' cannot be sent: ${problem}; set it again with ` +
          `tether secret set ${ext} ${binding.name}`,
      );
  } catch (err) {
    if (!(err instanceof SecretStoreError)) throw err;
    // The message names paths and modes, never a value.
    scope.env.log.error("a secret could not be read", { extension: ext, secret: binding.name, error: err.message });
    return {
      rule: `secret:${binding.name} unreadable`,
      msg:
        `net.fetch refused: the broker cannot read secret '${binding.name}' as it is stored; the operator's log ` +
        `says why`,
    };
  }
  if (value === null) {
    return {
      rule: `secret:${binding.name} not set`,
      msg:
        `net.fetch refused: secret '${binding.name}' is not set; the operator must run: tether secret ` +
        `set ${ext} ${binding.name}`,
    };
  }
  return inject(binding, redactor, exchange, value);
}

/** The hop with `value` in the binding's header or query parameter; the redactor learns both forms of it. */
function inject(
  binding: FetchSecret["binding"],
  redactor: FetchSecret["redactor"],
  exchange: Exchange,
  value: string,
): SentHop {
  const sent = formatted(binding.format, value);
  redactor.add(value, sent);
  if (binding.header !== undefined) {
    const header = binding.header.toLowerCase();
    return {
      url: exchange.url,
      headers: [...exchange.headers.filter(([n]) => n !== header), [header, sent]],
      carried: true,
    };
  }
  const url = new URL(exchange.url.href);
  const query = binding.query!;
  // A redirect may bring the parameter back (redacted): the broker's value replaces it.
  if (url.searchParams.has(query)) url.searchParams.delete(query);
  const pair = `${encodeURIComponent(query)}=${encodeURIComponent(sent)}`;
  url.search = url.search === "" ? `?${pair}` : `${url.search}&${pair}`;
  return { url, headers: exchange.headers, carried: true };
}
