/**
 * Which model providers the broker serves, and what each offers: the
 * `[[provider]]` rows of the extensions that are installed, approved and
 * enabled **globally** (the global preference: a session's override neither
 * adds nor removes one), whose requirements are met, in registry order. Two
 * extensions that declare one provider name collide as tools do: the later in
 * registry order serves no provider at all, and says why.
 */
import { TetherError } from "../base/errors.js";
import type { KernelHost } from "../kernel/host.js";
import type { Manifest } from "../install/manifest.js";
import { describeProblem, registryOrder } from "../sessions/order.js";
import { GLOBAL, Preferences } from "../sessions/preferences.js";

export type ProviderModel = Manifest["provider"][number]["models"][number];

/** One provider as harnesses see it. */
export interface ProviderEntry {
  readonly name: string;
  /** The extension whose daemon satellite answers its completions. */
  readonly extension: string;
  readonly description: string;
  readonly base_url: string;
  /** The secret's name the manifest binds to it (never a value), or null. */
  readonly secret: string | null;
  readonly models: readonly ProviderModel[];
}

/** A provider an installed extension declares that is not served, and why. */
export interface UnavailableProvider {
  readonly provider: string;
  readonly extension: string;
  readonly reason: string;
}

export interface ProviderCatalog {
  /** Registry order; each extension's providers in manifest order. */
  readonly providers: readonly ProviderEntry[];
  readonly unavailable: readonly UnavailableProvider[];
}

/** Why `name` cannot serve anything from the daemon scope now, or null when it can. */
function ineligible(broker: KernelHost, preferences: Preferences, name: string): string | null {
  if (!preferences.effective(GLOBAL, name).enabled)
    return `'${name}' is turned off globally (tether session enable ${name} turns it on)`;
  try {
    broker.approved(name);
  } catch (err) {
    if (err instanceof TetherError) return err.message;
    throw err;
  }
  return null;
}

/** The providers served now (see the file's comment), and those declared but not served, with why. */
export function providerCatalog(broker: KernelHost): ProviderCatalog {
  const preferences = new Preferences(broker.store);
  const unavailable: UnavailableProvider[] = [];
  const miss = (manifest: Manifest, reason: string) => {
    for (const row of manifest.provider) unavailable.push({ provider: row.name, extension: manifest.name, reason });
  };
  // Every eligible extension takes part in the order (a provider may require one that is not a provider).
  const eligible = new Map<string, Manifest>();
  for (const installed of broker.registry.list()) {
    const why = ineligible(broker, preferences, installed.name);
    if (why === null) eligible.set(installed.name, installed.manifest);
    else miss(installed.manifest, why);
  }
  const { order, inactive } = registryOrder(
    [...eligible.values()].map((m) => ({ name: m.name, requires: m.requires, priority: m.priority })),
  );
  for (const [name, problem] of inactive) miss(eligible.get(name)!, `'${name}' ${describeProblem(problem)}`);
  const providers: ProviderEntry[] = [];
  const owner = new Map<string, string>();
  for (const name of order) {
    const manifest = eligible.get(name)!;
    const granted = broker.approved(name).approval.grants.providers;
    const rows = manifest.provider.filter((row) => granted.includes(row.name));
    // A taken name costs the later extension all of its providers, as a taken tool name costs it the session.
    const taken = rows.find((row) => owner.has(row.name));
    if (taken !== undefined) {
      miss(
        manifest,
        `provider '${taken.name}' is also served by '${owner.get(taken.name)}', which comes first ` +
          `in registry order; '${name}' serves no provider (rename it, or set a lower priority)`,
      );
      continue;
    }
    for (const row of rows) {
      owner.set(row.name, name);
      providers.push({
        name: row.name,
        extension: name,
        description: row.description,
        base_url: row.base_url,
        secret: row.secret ?? null,
        models: row.models,
      });
    }
  }
  return { providers, unavailable };
}
