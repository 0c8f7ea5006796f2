/**
 * What `Broker.providers()` answers: the providers served now (ranked by a
 * session's saved preference when one is named), those declared but not
 * served and why, and the daemon scope's state.
 */
import type { KernelHost } from "../kernel/host.js";
import { providerPreferencesOf } from "../store/rank-preferences-repository.js";
import { providerCatalog, type UnavailableProvider } from "./catalog.js";
import { daemonStatus, type DaemonStatus } from "./daemon.js";
import { rankProviders, type RankedProviders } from "./ranking.js";

export interface ProvidersView extends RankedProviders {
  readonly unavailable: readonly UnavailableProvider[];
  readonly daemon: DaemonStatus;
}

export function providersFor(broker: KernelHost, session?: string): ProvidersView {
  const catalog = providerCatalog(broker);
  const preference = session === undefined ? null : providerPreferencesOf(broker.store).get(session);
  return {
    ...rankProviders(catalog, preference),
    unavailable: catalog.unavailable,
    daemon: daemonStatus(broker, catalog),
  };
}
