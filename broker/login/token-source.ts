/**
 * The one way a token leaves the login store: `currentToken(extension,
 * secretName)`, called by the broker when it injects a `[[secret]]` into a
 * request at send time (docs/secrets.md). It refreshes a token that is due
 * (one refresh at a time per sign-in, however many requests ask at once) and
 * never answers a token past its expiry. Nothing here logs or throws a token:
 * failures are logged by extension and login name, and answer null.
 */
import type { Logger } from "../base/log.js";
import type { LoginRow } from "../install/login-row.js";
import type { Clock } from "./clock.js";
import { OAuthError } from "./endpoint.js";
import { isDue, isUsable, refreshTokens } from "./refresh.js";
import type { StoredLogin, TokenStore } from "./token-store.js";

/**
 * What the secret injector calls: the access token that fills
 * `secretName` now, or null (not signed in, expired, not approved).
 */
export interface TokenSource {
  currentToken(extension: string, secretName: string): Promise<string | null>;
}

export interface LoginTokensOptions {
  readonly store: TokenStore;
  /** The `[[login]]` rows of the extension as approved; null when it is not installed or not approved. */
  readonly rowsOf: (extension: string) => readonly LoginRow[] | null;
  readonly clock: Clock;
  readonly log: Logger;
  /** The `fetch` an extension's refreshes use (judged: judged-fetch.ts). */
  readonly fetchFor?: (extension: string) => typeof fetch | undefined;
}

export class LoginTokens implements TokenSource {
  readonly #o: LoginTokensOptions;
  /** Refreshes in flight, by `<extension>.<login>`: a second caller waits for the first. */
  readonly #refreshing = new Map<string, Promise<StoredLogin | null>>();

  constructor(options: LoginTokensOptions) {
    this.#o = options;
  }

  async currentToken(extension: string, secretName: string): Promise<string | null> {
    const row = this.#o.rowsOf(extension)?.find((r) => r.secret === secretName);
    if (row === undefined) return null;
    const stored = await this.fresh(extension, row);
    return stored !== null && isUsable(stored, this.#o.clock.now()) ? stored.access_token : null;
  }

  /**
   * The stored sign-in, refreshed first when it is due (or when
   * `force`); null when there is none or it cannot be used.
   */
  async fresh(extension: string, row: LoginRow, force = false): Promise<StoredLogin | null> {
    const stored = this.#read(extension, row.name);
    if (stored === null) return null;
    const now = this.#o.clock.now();
    if (!force && !isDue(stored, now)) return stored;
    if (stored.refresh_token === null) return isUsable(stored, now) ? stored : null;
    const key = `${extension}.${row.name}`;
    let running = this.#refreshing.get(key);
    if (running === undefined) {
      running = this.#refresh(row, stored).finally(() => this.#refreshing.delete(key));
      this.#refreshing.set(key, running);
    }
    return running;
  }

  #read(extension: string, login: string): StoredLogin | null {
    try {
      return this.#o.store.read(extension, login);
    } catch (err) {
      this.#o.log.warn(`login ${extension}/${login}: the stored sign-in cannot be used: ${(err as Error).message}`, {
        extension,
      });
      return null;
    }
  }

  async #refresh(row: LoginRow, stored: StoredLogin): Promise<StoredLogin | null> {
    const { extension } = stored;
    try {
      const fetch = this.#o.fetchFor?.(extension);
      const next = await refreshTokens(row, stored, this.#o.clock, fetch !== undefined ? { fetch } : {});
      this.#o.store.write(next);
      this.#o.log.info(`login ${extension}/${row.name}: refreshed the access token`, { extension });
      return next;
    } catch (err) {
      // Another process (tether serve and a tether call share the
      // home) may have refreshed first with a rotating refresh token.
      const again = this.#read(extension, row.name);
      if (again !== null && again.obtained_at !== stored.obtained_at) return again;
      const dead = err instanceof OAuthError && err.oauthCode === "invalid_grant";
      this.#o.log.warn(
        `login ${extension}/${row.name}: refreshing ` +
          `failed: ${(err as Error).message}${dead ? `; sign in again: tether login ${extension} ${row.name}` : ""}`,
        { extension },
      );
      return isUsable(stored, this.#o.clock.now()) ? stored : null;
    }
  }
}
