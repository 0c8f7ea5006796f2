/**
 * What a session holds for search: its saved preference (table
 * `search_preferences`), its providers as ranked now (search-providers.ts),
 * the search itself (search-call.ts), and the two views other parts are
 * handed — the list a host route's payload carries and the search the
 * `search.query` capability asks (broker/base/search-port.ts).
 */
import { MAX_SEARCH_RESULTS, type SearchProviderInfo } from "../../jail-runtime/wire/search-kinds.js";
import type { SessionSearch } from "../base/search-port.js";
import type { SessionScope } from "../kernel/session-scope.js";
import type { Store } from "../store/open.js";
import { type RankPreferencesRepository, searchPreferencesOf } from "../store/rank-preferences-repository.js";
import type { ActiveSet } from "./active-set.js";
import { checkSearchInput, type SearchCallOptions, type SearchReport, sessionSearch } from "./search-call.js";
import { checkSearchPreference, type SessionSearchProviders, searchProvidersOf } from "./search-providers.js";

/** The most notes the capability hands back, and their longest line. */
const MAX_NOTES = MAX_SEARCH_RESULTS + 8;
const MAX_NOTE = 1024;
const cut = (n: string) => (n.length > MAX_NOTE ? `${n.slice(0, MAX_NOTE - 1)}…` : n);

export class SessionSearchParts {
  readonly #preferences: RankPreferencesRepository;
  readonly #scope: SessionScope;
  readonly #active: ActiveSet;

  constructor(store: Store, scope: SessionScope, active: ActiveSet) {
    this.#preferences = searchPreferencesOf(store);
    this.#scope = scope;
    this.#active = active;
  }

  prefer(preference: { rank?: readonly string[]; exclude?: readonly string[] } | null): void {
    this.#preferences.set(this.#scope.id, preference === null ? null : checkSearchPreference(preference));
  }

  providers(): SessionSearchProviders {
    return searchProvidersOf(this.#active, this.#preferences.get(this.#scope.id));
  }

  /** Rejects with `bad_arguments` for a query or options that do not fit. */
  async search(query: unknown, options: unknown, call: SearchCallOptions = {}): Promise<SearchReport> {
    const input = checkSearchInput(query, options);
    return sessionSearch({ scope: this.#scope, providers: () => this.providers() }, input.query, input.options, call);
  }

  /** What a host route is told: the providers in preference order, names and descriptions. */
  forRoutes(): SearchProviderInfo[] {
    return this.providers().providers.map((p) => ({
      name: p.name,
      extension: p.extension,
      description: p.description,
    }));
  }

  /** The search the `search.query` capability asks: the asker's own providers left out, the notes bounded. */
  forCapability(): SessionSearch {
    return async (ask) => {
      if (this.#active.closed) return { results: [], notes: [`session '${this.#scope.id}' is closed`] };
      this.#active.refresh();
      const report = await sessionSearch(
        { scope: this.#scope, providers: () => this.providers() },
        ask.query,
        ask.options,
        { asker: ask.extension, signal: ask.signal, chain: ask.chain },
      );
      return {
        results: [...report.results],
        notes: report.notes.slice(0, MAX_NOTES).map(cut),
      };
    };
  }
}
