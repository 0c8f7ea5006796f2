/**
 * Which extensions a session wants: a global default per extension, and
 * per-session overrides, saved in the store. This is the *desired* choice;
 * a failed apply (issue 5's reload) leaves it saved for retry.
 *
 * Groundwork for sessions (issue 5).
 */
import { and, eq } from "drizzle-orm";
import type { Store } from "../store/open.js";
import { preferences } from "../store/schema.js";

/** The scope of the global defaults in the `preferences` table. */
export const GLOBAL = "global";

export interface Preference {
  readonly enabled: boolean;
  /** Where the answer came from: a session override, the global default, or the extension's own default. */
  readonly source: "session" | "global" | "default";
}

export class Preferences {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  #set(scope: string, extension: string, enabled: boolean): void {
    const row = { scope, extension, enabled, updatedAt: Date.now() };
    this.#store.orm
      .insert(preferences)
      .values(row)
      .onConflictDoUpdate({ target: [preferences.scope, preferences.extension], set: { enabled, updatedAt: row.updatedAt } })
      .run();
  }

  #get(scope: string, extension: string): boolean | undefined {
    return this.#store.orm
      .select({ enabled: preferences.enabled })
      .from(preferences)
      .where(and(eq(preferences.scope, scope), eq(preferences.extension, extension)))
      .get()?.enabled;
  }

  /** Sets the global default for an extension. */
  setGlobal(extension: string, enabled: boolean): void {
    this.#set(GLOBAL, extension, enabled);
  }

  /** Overrides the default in one session; `null` removes the override. */
  setSession(session: string, extension: string, enabled: boolean | null): void {
    if (session === GLOBAL) throw new Error(`'${GLOBAL}' is reserved for the global defaults`);
    if (enabled === null) {
      this.#store.orm.delete(preferences).where(and(eq(preferences.scope, session), eq(preferences.extension, extension))).run();
      return;
    }
    this.#set(session, extension, enabled);
  }

  /**
   * Whether `extension` is wanted in `session`: the session's override, else the
   * global default, else `extensionDefault` (on for ordinary extensions; the
   * built-in command-hooks extension is off by default).
   */
  effective(session: string, extension: string, extensionDefault = true): Preference {
    const own = session === GLOBAL ? undefined : this.#get(session, extension);
    if (own !== undefined) return { enabled: own, source: "session" };
    const global = this.#get(GLOBAL, extension);
    if (global !== undefined) return { enabled: global, source: "global" };
    return { enabled: extensionDefault, source: "default" };
  }
}
