/**
 * Uninstalling (`tether uninstall <name> [--purge]`, the console's uninstall):
 * revokes and removes the install. What the extension stored (kv, skv, its
 * database) stays unless `purge`, and the answer says what stayed or what was
 * removed, so nothing is kept or lost silently.
 */
import type { SessionFleet } from "../broker-options.js";
import type { Registry } from "../registry/registry.js";
import type { Store } from "../store/open.js";
import { FleetKv } from "../store/pg/fleet-kv.js";
import {
  describeData,
  extensionData,
  holdsData,
  purgeExtensionData,
  type ExtensionData,
} from "../store/extension-data.js";

export interface Uninstalled {
  readonly name: string;
  readonly uninstalled: true;
  readonly purged: boolean;
  /** What it had stored: left in place, or (purged) removed. */
  readonly data: ExtensionData;
}

/**
 * What uninstalling reads and changes: the registry, the
 * store and the home, and the fleet's keys on a fleet's host.
 */
export interface UninstallHost {
  readonly registry: Registry;
  readonly store: Store;
  readonly home: string;
  readonly fleet: Pick<SessionFleet, "kv"> | null;
}

/**
 * What `tether uninstall` does; the console's uninstall calls it
 * too. `by`: who revokes (default: the registry's operator name).
 */
export async function runUninstall(
  host: UninstallHost,
  name: string,
  purge: boolean,
  by?: string,
): Promise<{ result: Uninstalled; text: string }> {
  host.registry.uninstall(name, by !== undefined ? { by } : {});
  const local = extensionData(host.store, host.home, name);
  // A fleet's host: the keys are the fleet's (every host's), the database this host's own.
  const fleet = host.fleet?.kv;
  const data: ExtensionData = fleet instanceof FleetKv ? { ...local, ...(await fleet.data(name)) } : local;
  if (purge) {
    purgeExtensionData(host.store, host.home, name);
    if (fleet instanceof FleetKv) await fleet.purge(name);
  }
  const lines = describeData(data).map((l) => `  ${l}`);
  let text = `uninstalled ${name}`;
  if (!holdsData(data)) text += purge ? "; it had stored nothing" : "";
  else if (purge) text += `; removed its data:\n${lines.join("\n")}`;
  else
    text +=
      `; its data stays (a reinstall finds it again; tether ` +
      `uninstall ${name} --purge removes it):\n${lines.join("\n")}`;
  return { result: { name, uninstalled: true, purged: purge, data }, text };
}
