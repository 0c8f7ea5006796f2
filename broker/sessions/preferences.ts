/**
 * Which extensions a session wants: a global default per extension, and
 * per-session overrides, saved in the store. This is the *desired* choice;
 * a failed apply (issue 5's reload) leaves it saved for retry.
 *
 * Groundwork for sessions (issue 5).
 */
import type { Store } from "../store/open.js";
import { PreferencesRepository } from "../store/preferences-repository.js";

/** The scope of the global defaults in the `preferences` table. */
export const GLOBAL = "global";

export interface Preference {
  readonly enabled: boolean;
  /** Where the answer came from: a session override, the global default, or the extension's own default. */
  readonly source: "session" | "global" | "default";
}

export class Preferences {
  readonly #saved: PreferencesRepository;

  constructor(store: Store) {
    this.#saved = new PreferencesRepository(store);
  }

  /** Sets the global default for an extension. */
  setGlobal(extension: string, enabled: boolean): void {
    this.#saved.set(GLOBAL, extension, enabled);
  }

  /** Overrides the default in one session; `null` removes the override. */
  setSession(session: string, extension: string, enabled: boolean | null): void {
    if (session === GLOBAL) throw new Error(`'${GLOBAL}' is reserved for the global defaults`);
    if (enabled === null) {
      this.#saved.delete(session, extension);
      return;
    }
    this.#saved.set(session, extension, enabled);
  }

  /**
   * Whether `extension` is wanted in `session`: the session's override, else the
   * global default, else `extensionDefault` (on for ordinary extensions; the
   * built-in command-hooks extension is off by default).
   */
  effective(session: string, extension: string, extensionDefault = true): Preference {
    const own = session === GLOBAL ? undefined : this.#saved.get(session, extension);
    if (own !== undefined) return { enabled: own, source: "session" };
    const global = this.#saved.get(GLOBAL, extension);
    if (global !== undefined) return { enabled: global, source: "global" };
    return { enabled: extensionDefault, source: "default" };
  }

  /** The sessions with their own override for `extension`, by session id. */
  overrides(extension: string): Array<{ session: string; enabled: boolean }> {
    return this.#saved.scopesOf(extension, GLOBAL).map(({ scope, enabled }) => ({ session: scope, enabled }));
  }
}
