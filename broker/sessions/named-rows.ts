/**
 * The session's host routes and compaction strategies: the `[[route]]` and
 * `[[compaction]]` rows of its active extensions that their approval grants, in
 * registry order — and, for a name no active extension serves, the answer that
 * names the inactive one that would, and why (as tools and commands do).
 */
import { BrokerCode, WireCode } from "../base/errors.js";
import { failure, type Failure } from "../base/outcome.js";
import type { RouteResource } from "../install/route-resource.js";
import type { ActiveSet } from "./active-set.js";

export type RowKind = "route" | "compaction";

export interface NamedRow {
  readonly name: string;
  readonly extension: string;
  readonly description: string;
  /** A route's manifest `resource`, when it declares one: `tether mcp` serves it as an MCP resource. */
  readonly resource?: RouteResource;
}

const NOUN: Record<RowKind, string> = { route: "route", compaction: "compaction strategy" };

/**
 * The approved rows of `kind` of the session's active extensions, in registry order: granted by the
 * approval the active set was planned under (a call to one boots the extension's satellite when none runs).
 */
export function activeRows(active: ActiveSet, kind: RowKind): NamedRow[] {
  const out: NamedRow[] = [];
  for (const extension of active.applied.plan.active) {
    const k = active.applied.known.get(extension);
    const manifest = k?.installed?.manifest;
    const grants = k?.grants;
    if (manifest === undefined || grants === undefined || grants === null) continue;
    const granted = kind === "route" ? grants.routes : grants.compactions;
    for (const row of manifest[kind]) {
      if (!granted.includes(row.name)) continue;
      const resource = "resource" in row ? row.resource : undefined;
      out.push({
        name: row.name,
        extension,
        description: row.description,
        ...(resource !== undefined ? { resource } : {}),
      });
    }
  }
  return out;
}

/**
 * Why `name` (of `extension`, when given) is not served: `inactive` with the
 * reason when an extension that is not active declares it, else `unknown_tool`
 * listing what the session serves.
 */
export function notServedRow(active: ActiveSet, kind: RowKind, name: string, extension?: string): Failure {
  const { plan, known } = active.applied;
  for (const k of known.values()) {
    if (extension !== undefined && k.name !== extension) continue;
    if (plan.active.includes(k.name) || !(k.installed?.manifest[kind] ?? []).some((r) => r.name === name)) continue;
    const reason = plan.inactive.get(k.name) ?? "not active";
    return failure(
      BrokerCode.inactive,
      `The ${NOUN[kind]} '${name}' belongs to '${k.name}', which is inactive in this session: ${reason}`,
    );
  }
  const served = activeRows(active, kind).map((r) => (kind === "route" ? `${r.extension}/${r.name}` : r.name));
  const what = extension !== undefined && kind === "route" ? `${extension}/${name}` : name;
  return failure(
    WireCode.unknownTool,
    `Unknown ${NOUN[kind]} '${what}'; this session serves [${served.sort().join(", ")}]`,
  );
}
