/**
 * A `[[route]]` row's `resource`: the route served as an MCP resource by
 * `tether mcp` (docs/mcp.md, "Resources"). `uri` is a fixed URI, or an RFC
 * 6570 level-1 template whose `{var}` segments a read fills (a resource
 * template). The schema says the shape; `routeResourceProblems` what a schema
 * cannot: no reserved scheme, variables that can be told apart, no URI twice.
 */
import * as v from "valibot";

/** The most characters of a resource's URI or URI template (a client shows it; a read sends it back). */
export const MAX_RESOURCE_URI = 1024;
/** The most `{var}` segments one URI template may hold. */
export const MAX_TEMPLATE_VARIABLES = 16;
/** The scheme of the broker's own resources (the session's context): no route may take it. */
export const RESERVED_RESOURCE_SCHEME = "tether";

/** A URI character outside an expression (RFC 3986 unreserved, reserved but `{}`, or a %-escape). */
const LITERAL = String.raw`[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=-]|%[0-9A-Fa-f]{2}`;
/** A level-1 expression: `{name}`, no operator, no modifier, one variable. */
const VARIABLE = String.raw`\{[A-Za-z0-9_]{1,64}\}`;
const RESOURCE_URI = new RegExp(`^[A-Za-z][A-Za-z0-9+.-]{0,31}:(?:${LITERAL}|${VARIABLE})+$`);
/** `type/subtype` (RFC 6838 names), without parameters. */
const MIME_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;

export const RouteResource = v.strictObject({
  uri: v.pipe(
    v.string(),
    v.maxLength(MAX_RESOURCE_URI, `expected a URI of at most ${MAX_RESOURCE_URI} characters`),
    v.regex(
      RESOURCE_URI,
      "expected a URI with a scheme (test://static-text), or a URI template whose {name} segments " +
        "(letters, digits and _, at most 64) a read fills (test://items/{id}); no spaces, no other braces",
    ),
  ),
  mime_type: v.optional(
    v.pipe(v.string(), v.regex(MIME_TYPE, "expected a MIME type, type/subtype without parameters (text/plain)")),
    "text/plain",
  ),
});
export type RouteResource = v.InferOutput<typeof RouteResource>;

const VARIABLES = /\{([A-Za-z0-9_]{1,64})\}/g;

/** The `{var}` names of a URI template, in order (none: a fixed URI). */
export function templateVariables(uri: string): string[] {
  return [...uri.matchAll(VARIABLES)].map((m) => m[1]!);
}

/** The URI with its variables' names left out: two templates that differ only in those serve the same URIs. */
const shapeOf = (uri: string) => uri.replace(VARIABLES, "{}");

/** What is wrong with the routes' resources, each naming the route and what to change. */
export function routeResourceProblems(
  rows: readonly { readonly name: string; readonly resource?: RouteResource | undefined }[],
  file: string,
): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const row of rows) {
    if (row.resource === undefined) continue;
    const { uri } = row.resource;
    const at = `${file}: route '${row.name}': resource.uri '${uri}'`;
    const scheme = uri.slice(0, uri.indexOf(":")).toLowerCase();
    if (scheme === RESERVED_RESOURCE_SCHEME)
      problems.push(`${at} uses the scheme ${scheme}:, which the broker's own resources use; choose another scheme`);
    const variables = templateVariables(uri);
    if (variables.length > MAX_TEMPLATE_VARIABLES)
      problems.push(`${at} has ${variables.length} {variables}; a template may have at most ${MAX_TEMPLATE_VARIABLES}`);
    const twice = variables.filter((name, i) => variables.indexOf(name) !== i);
    if (twice.length > 0) problems.push(`${at} names the variable {${twice[0]}} twice; give each its own name`);
    if (uri.includes("}{"))
      problems.push(
        `${at} has two variables side by side, which a read could not tell apart; put a character between them`,
      );
    const shape = shapeOf(uri);
    const other = seen.get(shape);
    if (other !== undefined)
      problems.push(`${at} is also the resource of route '${other}'; each route must serve its own URIs`);
    else seen.set(shape, row.name);
  }
  return problems;
}
