/**
 * The `preferences` table: whether an extension is enabled, per scope (the
 * global defaults' scope, or a session id). What the scopes mean is
 * `sessions/preferences.ts`'s to say.
 */
import { and, asc, eq, ne } from "drizzle-orm";
import type { Store } from "./open.js";
import { preferences } from "./schema.js";

export class PreferencesRepository {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** The saved choice for `extension` in `scope`, if any. */
  get(scope: string, extension: string): boolean | undefined {
    return this.#store.orm
      .select({ enabled: preferences.enabled })
      .from(preferences)
      .where(and(eq(preferences.scope, scope), eq(preferences.extension, extension)))
      .get()?.enabled;
  }

  set(scope: string, extension: string, enabled: boolean): void {
    const updatedAt = Date.now();
    this.#store.orm
      .insert(preferences)
      .values({ scope, extension, enabled, updatedAt })
      .onConflictDoUpdate({ target: [preferences.scope, preferences.extension], set: { enabled, updatedAt } })
      .run();
  }

  delete(scope: string, extension: string): void {
    this.#store.orm
      .delete(preferences)
      .where(and(eq(preferences.scope, scope), eq(preferences.extension, extension)))
      .run();
  }

  /** Every saved choice for `extension` outside `exceptScope`, by scope. */
  scopesOf(extension: string, exceptScope: string): Array<{ scope: string; enabled: boolean }> {
    return this.#store.orm
      .select({ scope: preferences.scope, enabled: preferences.enabled })
      .from(preferences)
      .where(and(eq(preferences.extension, extension), ne(preferences.scope, exceptScope)))
      .orderBy(asc(preferences.scope))
      .all();
  }
}
