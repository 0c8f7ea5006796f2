/**
 * The session's MCP resources: what its extensions already serve, nothing
 * new for them to implement.
 *
 * - its composed context (`session.context()`): each context loader's text at
 *   `tether://context/<extension>/<loader>`, a managed preparation's
 *   instructions and context at `tether://prepare/<extension>` (a loader may be
 *   named `prepare`), `text/plain`;
 * - each approved `[[route]]` of an active extension that declares a
 *   `resource`: a fixed URI is a resource, a URI template a resource template.
 *   Reading one calls the route (`session.route`, so `route_call` hooks, the
 *   ledger and its time limit apply) with the JSON text `{uri, params}`.
 *
 * Two extensions declaring one URI: the first in registry order serves it, as
 * it keeps a colliding tool name. A fixed URI is matched before any template.
 */
import { McpFailure } from "./mcp-failure.js";
import type { ReadResourceResult, Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode } from "./protocol/error-codes.js";
import { MAX_RESOURCE_URI, type RouteResource } from "../install/route-resource.js";
import type { NamedRow, Session } from "../sessions/session.js";
import { resourceContents } from "./resource-content.js";
import { uriTemplate, type UriTemplate } from "./uri-template.js";

/** MCP's error for a URI the server does not serve (the spec's "Resource not found"). */
export const RESOURCE_NOT_FOUND = -32002;

type ResourceRoute = NamedRow & { readonly resource: RouteResource };

interface ContextResource {
  readonly resource: Resource;
  readonly extension: string;
  readonly source: string;
}

interface RouteResources {
  readonly fixed: ReadonlyMap<string, ResourceRoute>;
  readonly templates: readonly { readonly route: ResourceRoute; readonly template: UriTemplate }[];
  /** Left out: an earlier extension serves the same URI. */
  readonly shadowed: readonly { readonly route: ResourceRoute; readonly by: string }[];
}

export interface SessionResources {
  readonly resources: Resource[];
  readonly templates: ResourceTemplate[];
  /** Route resources not served: an earlier extension (registry order) serves the URI, named in `by`. */
  readonly shadowed: readonly {
    readonly extension: string;
    readonly route: string;
    readonly uri: string;
    readonly by: string;
  }[];
}

const contextUri = (extension: string, source: string) =>
  source === "prepare"
    ? `tether://prepare/${extension}`
    : `tether://context/${extension}/${source.replace(/^context:/, "")}`;

/** One resource per loader and per preparation (whose instructions and context are two pieces). */
function contextResources(session: Session): Map<string, ContextResource & { text: string }> {
  const out = new Map<string, ContextResource & { text: string }>();
  for (const piece of session.context()) {
    const uri = contextUri(piece.extension, piece.source);
    const seen = out.get(uri);
    if (seen !== undefined) {
      seen.text = `${seen.text}\n\n${piece.text}`;
      continue;
    }
    const loader = piece.source.replace(/^context:/, "");
    const description =
      piece.source === "prepare"
        ? `The instructions and context '${piece.extension}' prepared for this session`
        : `The text the context loader '${loader}' of '${piece.extension}' loaded when the session activated it`;
    out.set(uri, {
      resource: {
        uri,
        name: piece.source === "prepare" ? `${piece.extension}/prepare` : `${piece.extension}/${loader}`,
        description,
        mimeType: "text/plain",
      },
      extension: piece.extension,
      source: piece.source,
      text: piece.text,
    });
  }
  return out;
}

const isResourceRoute = (row: NamedRow): row is ResourceRoute => row.resource !== undefined;

function routeResources(session: Session): RouteResources {
  const fixed = new Map<string, ResourceRoute>();
  const templates: { route: ResourceRoute; template: UriTemplate }[] = [];
  const shapes = new Map<string, ResourceRoute>();
  const shadowed: { route: ResourceRoute; by: string }[] = [];
  for (const route of session.routes().filter(isResourceRoute)) {
    // Two templates that differ only in their variables' names serve the same URIs.
    const shape = route.resource.uri.replace(/\{[A-Za-z0-9_]{1,64}\}/g, "{}");
    const earlier = shapes.get(shape);
    if (earlier !== undefined) {
      shadowed.push({ route, by: `${earlier.extension}/${earlier.name}` });
      continue;
    }
    const template = uriTemplate(route.resource.uri);
    // The first in registry order serves a URI: a later extension's fixed URI that an earlier one's
    // template already reads is left out (fixed before template holds within one extension).
    const under =
      template.variables.length === 0
        ? templates.find((t) => t.route.extension !== route.extension && t.template.match(route.resource.uri) !== null)
        : undefined;
    if (under !== undefined) {
      shadowed.push({ route, by: `${under.route.extension}/${under.route.name}` });
      continue;
    }
    shapes.set(shape, route);
    if (template.variables.length === 0) fixed.set(route.resource.uri, route);
    else templates.push({ route, template });
  }
  return { fixed, templates, shadowed };
}

/** What `resources/list` and `resources/templates/list` answer, and which route resources were left out. */
export function sessionResources(session: Session): SessionResources {
  const routes = routeResources(session);
  const described = (route: ResourceRoute) => ({
    name: `${route.extension}/${route.name}`,
    description: route.description,
    mimeType: route.resource.mime_type,
  });
  return {
    resources: [
      ...[...contextResources(session).values()].map((c) => c.resource),
      ...[...routes.fixed.values()].map((route) => ({ uri: route.resource.uri, ...described(route) })),
    ],
    templates: routes.templates.map(({ route }) => ({ uriTemplate: route.resource.uri, ...described(route) })),
    shadowed: routes.shadowed.map(({ route, by }) => ({
      extension: route.extension,
      route: route.name,
      uri: route.resource.uri,
      by,
    })),
  };
}

/** Whether the session serves any resource now (the capability is declared only then). */
export function servesResources(session: Session): boolean {
  const served = sessionResources(session);
  return served.resources.length > 0 || served.templates.length > 0;
}

/** The most URIs a not-found error lists. */
const LISTED_IN_ERRORS = 20;

function notFound(session: Session, uri: string): McpFailure {
  const served = sessionResources(session);
  const all = [...served.resources.map((r) => r.uri), ...served.templates.map((t) => t.uriTemplate)];
  const listed =
    all.length === 0
      ? "none"
      : all.slice(0, LISTED_IN_ERRORS).join(", ") +
        (all.length > LISTED_IN_ERRORS ? ` and ${all.length - LISTED_IN_ERRORS} more (resources/list)` : "");
  return new McpFailure(RESOURCE_NOT_FOUND, `Resource not found: '${uri}'; this session serves ${listed}`, { uri });
}

export interface ReadOptions {
  readonly signal?: AbortSignal;
  /** The `route_call` hooks' notes (for the user, not the model). */
  readonly onNote?: (line: string) => void;
  /** Each line the route writes with its `log` capability, with the extension that wrote it. */
  readonly onLog?: (extension: string, level: "debug" | "info" | "warn" | "error", line: string) => void;
}

/**
 * `resources/read`: a context resource's current text, or its route's answer.
 * A route that fails (inactive, blocked, crashed, timeout…) is an MCP error
 * `<code>: <message>`; a URI nothing serves is `RESOURCE_NOT_FOUND`.
 */
export async function readResource(
  session: Session,
  uri: string,
  options: ReadOptions = {},
): Promise<ReadResourceResult> {
  if (uri.length > MAX_RESOURCE_URI)
    throw new McpFailure(
      ErrorCode.InvalidParams,
      `A resource URI here is at most ${MAX_RESOURCE_URI} characters; this one has ${uri.length}`,
    );
  const context = contextResources(session).get(uri);
  if (context !== undefined) return { contents: [{ uri, mimeType: "text/plain", text: context.text }] };
  const routes = routeResources(session);
  let route = routes.fixed.get(uri);
  let params: Record<string, string> = {};
  for (const t of route === undefined ? routes.templates : []) {
    const matched = t.template.match(uri);
    if (matched === null) continue;
    route = t.route;
    params = matched;
    break;
  }
  if (route === undefined) throw notFound(session, uri);
  const report = await session.route(route.extension, route.name, JSON.stringify({ uri, params }), {
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
    ...(options.onLog !== undefined ? { onLog: (level, line) => options.onLog?.(route.extension, level, line) } : {}),
  });
  for (const line of report.notes) options.onNote?.(`${route.extension}/${route.name}: ${line}`);
  if (!report.outcome.ok)
    throw new McpFailure(ErrorCode.InternalError, `${report.outcome.error.code}: ${report.outcome.error.msg}`);
  return { contents: [resourceContents(uri, route.resource.mime_type, report.outcome.response, route)] };
}
