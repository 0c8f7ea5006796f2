/**
 * A table of how each session ranks and excludes the providers of one kind —
 * `provider_preferences` (model providers) and `search_preferences` (search
 * providers), the same columns. What the lists mean is the kind's to say
 * (`providers/ranking.ts`, `sessions/search-providers.ts`); this file only
 * reads and writes rows (the lists bounded and checked on the way in, and
 * again on the way out).
 */
import { eq } from "drizzle-orm";
import * as v from "valibot";
import type { Store } from "./open.js";
import { providerPreferences, searchPreferences } from "./schema.js";

const Names = v.pipe(v.array(v.pipe(v.string(), v.maxLength(64))), v.maxLength(256));

/** Names to try first, in order, and names never to use. */
export interface RankPreference {
  readonly rank: readonly string[];
  readonly exclude: readonly string[];
}

/** A stored list, read back: anything that does not fit (a hand-edited row) reads as empty. */
function names(text: string): string[] {
  try {
    const parsed = v.safeParse(Names, JSON.parse(text));
    return parsed.success ? parsed.output : [];
  } catch {
    return [];
  }
}

type RankTable = typeof providerPreferences | typeof searchPreferences;

export class RankPreferencesRepository {
  readonly #store: Store;
  readonly #table: RankTable;

  constructor(store: Store, table: RankTable) {
    this.#store = store;
    this.#table = table;
  }

  /** The session's preference, or null when it has none. */
  get(sessionId: string): RankPreference | null {
    const table = this.#table;
    const row = this.#store.orm.select().from(table).where(eq(table.sessionId, sessionId)).get();
    return row === undefined ? null : { rank: names(row.rank), exclude: names(row.exclude) };
  }

  /** Saves the session's preference; `null` removes it. */
  set(sessionId: string, preference: RankPreference | null): void {
    const table = this.#table;
    if (preference === null) {
      this.#store.orm.delete(table).where(eq(table.sessionId, sessionId)).run();
      return;
    }
    const rank = JSON.stringify(preference.rank);
    const exclude = JSON.stringify(preference.exclude);
    const updatedAt = Date.now();
    this.#store.orm
      .insert(table)
      .values({ sessionId, rank, exclude, updatedAt })
      .onConflictDoUpdate({ target: table.sessionId, set: { rank, exclude, updatedAt } })
      .run();
  }
}

/** How sessions rank and exclude model providers. */
export const providerPreferencesOf = (store: Store) => new RankPreferencesRepository(store, providerPreferences);
/** How sessions rank and exclude search providers. */
export const searchPreferencesOf = (store: Store) => new RankPreferencesRepository(store, searchPreferences);
