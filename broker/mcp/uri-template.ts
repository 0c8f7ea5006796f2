/**
 * Reading a URI against a route's RFC 6570 level-1 URI template
 * (`test://template/{id}/data`): the literal parts must match exactly; each
 * `{var}` takes one or more characters up to the first place the next literal
 * stands (the last one, up to the end), never `/`, `?` or `#` (a level-1
 * expansion %-encodes those), and is %-decoded.
 *
 * A scan, not a regular expression: `^x://([^/?#]+)\.([^/?#]+)\.…$` backtracks
 * polynomially in the URI's length with the number of variables — a client's
 * read of one long URI stalled the broker's thread for seconds. The scan looks
 * at each character of the URI a bounded number of times (once per literal).
 */
import { templateVariables } from "../install/route-resource.js";

export interface UriTemplate {
  readonly template: string;
  readonly variables: readonly string[];
  /** The template's variables as `uri` fills them, or null when it does not fit. */
  match(uri: string): Record<string, string> | null;
}

/** Characters a variable's value never holds (level-1 expansion %-encodes them). */
const OUTSIDE_A_VALUE = /[/?#]/;

export function uriTemplate(template: string): UriTemplate {
  const variables = templateVariables(template);
  // literals[0] {v0} literals[1] {v1} … literals[n]: one more literal than variables.
  const literals = template.split(/\{[A-Za-z0-9_]{1,64}\}/);
  return {
    template,
    variables,
    match(uri) {
      const first = literals[0]!;
      if (!uri.startsWith(first)) return null;
      let at = first.length;
      const params: Record<string, string> = {};
      for (const [i, name] of variables.entries()) {
        const next = literals[i + 1]!;
        const last = i === variables.length - 1;
        // The value runs to the next literal's first place (at least one character), or, for
        // the last variable, to where the template's closing literal must end the URI.
        const end = last ? uri.length - next.length : uri.indexOf(next === "" ? "\u0000" : next, at + 1);
        if (end <= at || (last && !uri.endsWith(next))) return null;
        const raw = uri.slice(at, end);
        if (OUTSIDE_A_VALUE.test(raw)) return null;
        try {
          params[name] = decodeURIComponent(raw);
        } catch {
          // A broken %-escape: no expansion of the template makes it.
          return null;
        }
        at = end + next.length;
      }
      return at === uri.length ? params : null;
    },
  };
}
