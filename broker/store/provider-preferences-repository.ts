/**
 * The `provider_preferences` table: how a session ranks and excludes model
 * providers. What the lists mean is `providers/ranking.ts`'s to say; this
 * file only reads and writes rows (the lists bounded and checked on the way in).
 */
import { eq } from "drizzle-orm";
import * as v from "valibot";
import type { Store } from "./open.js";
import { providerPreferences } from "./schema.js";

const Names = v.pipe(v.array(v.pipe(v.string(), v.maxLength(64))), v.maxLength(256));

export interface ProviderPreference {
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

export class ProviderPreferencesRepository {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** The session's preference, or null when it has none. */
  get(sessionId: string): ProviderPreference | null {
    const row = this.#store.orm
      .select()
      .from(providerPreferences)
      .where(eq(providerPreferences.sessionId, sessionId))
      .get();
    return row === undefined ? null : { rank: names(row.rank), exclude: names(row.exclude) };
  }

  /** Saves the session's preference; `null` removes it. */
  set(sessionId: string, preference: ProviderPreference | null): void {
    if (preference === null) {
      this.#store.orm.delete(providerPreferences).where(eq(providerPreferences.sessionId, sessionId)).run();
      return;
    }
    const rank = JSON.stringify(preference.rank);
    const exclude = JSON.stringify(preference.exclude);
    const updatedAt = Date.now();
    this.#store.orm
      .insert(providerPreferences)
      .values({ sessionId, rank, exclude, updatedAt })
      .onConflictDoUpdate({ target: providerPreferences.sessionId, set: { rank, exclude, updatedAt } })
      .run();
  }
}
