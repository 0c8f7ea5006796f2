/**
 * Which `[[service]]` routes `tether serve` mounts: those of extensions that
 * are installed, approved (the route as approved: name, methods and path) and
 * enabled **globally** — a session's override neither adds nor removes one.
 */
import { TetherError } from "../base/errors.js";
import type { KernelHost } from "../kernel/host.js";
import type { Manifest } from "../install/manifest.js";
import { serviceGrant } from "../registry/grants.js";
import { GLOBAL, Preferences } from "../sessions/preferences.js";

export type ServiceRow = Manifest["service"][number];

/** The routes of `extension` served now, in manifest order; [] when it serves none (or is not eligible). */
export function mountedRoutes(broker: KernelHost, extension: string): readonly ServiceRow[] {
  if (!new Preferences(broker.store).effective(GLOBAL, extension).enabled) return [];
  let approved;
  try {
    approved = broker.approved(extension);
  } catch (err) {
    if (err instanceof TetherError) return [];
    throw err;
  }
  const granted = approved.approval.grants.services;
  return approved.installed.manifest.service.filter((row) => granted.includes(serviceGrant(row)));
}

/** The extensions that serve a route now: their daemon satellites are kept. */
export function serviceExtensions(broker: KernelHost): string[] {
  return broker.registry
    .list()
    .filter((i) => i.manifest.service.length > 0)
    .map((i) => i.name)
    .filter((name) => mountedRoutes(broker, name).length > 0);
}

/** Whether `path` (under `/ext/<extension>`) is the row's: equal, or under a `/*` prefix. */
export function routeMatches(row: ServiceRow, path: string): boolean {
  if (row.path.endsWith("/*")) return path.startsWith(row.path.slice(0, -1)) || path === row.path.slice(0, -2);
  return path === row.path;
}
