/**
 * Reading a URI against a route's RFC 6570 level-1 URI template
 * (`test://template/{id}/data`): the literal parts must match exactly; each
 * `{var}` takes one or more characters up to the next literal, never `/`, `?`
 * or `#` (a level-1 expansion %-encodes those), and is %-decoded.
 */
import { templateVariables } from "../install/route-resource.js";

export interface UriTemplate {
  readonly template: string;
  readonly variables: readonly string[];
  /** The template's variables as `uri` fills them, or null when it does not fit. */
  match(uri: string): Record<string, string> | null;
}

const escaped = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

export function uriTemplate(template: string): UriTemplate {
  const variables = templateVariables(template);
  const pattern = new RegExp(
    `^${template
      .split(/\{[A-Za-z0-9_]{1,64}\}/)
      .map(escaped)
      .join("([^/?#]+)")}$`,
  );
  return {
    template,
    variables,
    match(uri) {
      const found = pattern.exec(uri);
      if (found === null) return null;
      const params: Record<string, string> = {};
      for (const [i, name] of variables.entries()) {
        try {
          params[name] = decodeURIComponent(found[i + 1]!);
        } catch {
          // A broken %-escape: no expansion of the template makes it.
          return null;
        }
      }
      return params;
    },
  };
}
