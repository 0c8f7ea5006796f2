/**
 * The daemon scope: where satellites that serve the broker as a whole run —
 * model providers now, login refreshes later — apart from every session's.
 * It is a `SessionScope` under an id no session can take (`@daemon` fails the
 * session id's pattern, so neither a harness nor `tether serve` can open it):
 * the same jail, limits, pools and capability pipeline, its ledger and audit
 * rows under that id, no hook bus (no session holds it), and it is stopped
 * with every other scope by `Broker.close()`.
 */
import type { KernelHost } from "../kernel/host.js";
import { serviceExtensions } from "../services/mounted.js";
import type { ProviderCatalog } from "./catalog.js";

export { DAEMON_SCOPE } from "../kernel/session-scope.js";
import { DAEMON_SCOPE } from "../kernel/session-scope.js";

export interface DaemonStatus {
  /** The scope's id, as ledger and audit rows name it. */
  readonly scope: string;
  /** Extensions that may run daemon satellites now (they serve a provider), in registry order. */
  readonly eligible: readonly string[];
  /** Extensions with daemon satellites running in this broker now. */
  readonly running: readonly string[];
}

export function daemonStatus(broker: KernelHost, catalog: ProviderCatalog): DaemonStatus {
  const eligible = [...new Set(catalog.providers.map((p) => p.extension))];
  return { scope: DAEMON_SCOPE, eligible, running: [...broker.scope(DAEMON_SCOPE).live.keys()].sort() };
}

/** Stops the daemon satellites of extensions no longer eligible (turned off globally, lost a collision). */
export async function pruneDaemon(broker: KernelHost, catalog: ProviderCatalog): Promise<void> {
  const scope = broker.scope(DAEMON_SCOPE);
  // An extension serving HTTP routes keeps its satellite too.
  const eligible = new Set([...catalog.providers.map((p) => p.extension), ...serviceExtensions(broker)]);
  await Promise.all([...scope.live.keys()].filter((name) => !eligible.has(name)).map((name) => scope.deactivate(name)));
}
