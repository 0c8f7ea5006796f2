/**
 * The broker's sign-ins: which `[[login]]` rows an extension declares, running
 * a flow and storing what it obtains, the status listing, logout, and the token
 * source the secret injector reads. One per broker (`loginsOf`), so refreshes
 * are single-flight across the CLI, `tether serve` and injection.
 *
 * A sign-in runs only for an approved extension: its endpoints are the approved
 * manifest's, which the operator reviewed.
 */
import { OperatorPolicySource } from "../caps/policy.js";
import { systemResolver } from "../egress/system-resolver.js";
import { judgedFetch, type JudgedFetchOptions } from "./judged-fetch.js";
import type { KernelHost } from "../kernel/host.js";
import { BrokerCode, TetherError } from "../base/errors.js";
import type { Logger } from "../base/log.js";
import type { LoginRow } from "../install/login-row.js";
import type { Manifest } from "../install/manifest.js";
import type { Installed } from "../registry/registry.js";
import { startAuthorizationCode } from "./authorization-code.js";
import { systemClock, type Clock } from "./clock.js";
import { startDevice } from "./device.js";
import type { Started } from "./flow.js";
import { revokeAtServer } from "./logout.js";
import { statusOf, type LoginStatus } from "./status.js";
import { LoginTokens } from "./token-source.js";
import { TokenStore, type StoredLogin } from "./token-store.js";
import type { LoginSecrets } from "../secrets/store.js";

/** How long an authorization-code sign-in waits for the browser's redirect by default. */
export const DEFAULT_REDIRECT_TIMEOUT_MS = 300_000;

export interface InstalledLogins {
  readonly name: string;
  readonly manifest: Manifest;
  /** Approved as installed (not pending, changed or revoked). */
  readonly approved: boolean;
}

export interface LoginsOptions {
  readonly home: string;
  /** The installed extensions (the registry's view). */
  readonly extensions: () => readonly InstalledLogins[];
  /** One installed extension, or null. */
  readonly extension: (name: string) => InstalledLogins | null;
  readonly log: Logger;
  readonly clock?: Clock;
  /** Every request of every sign-in (tests: a fake; otherwise judged, below). */
  readonly fetch?: typeof fetch;
  /** What judges and audits each sign-in request when no `fetch` is given (judged-fetch.ts). */
  readonly judge?: Omit<JudgedFetchOptions, "extension">;
}

export interface StartOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
  readonly progress?: (line: string) => void;
}

export interface LogoutReport {
  readonly extension: string;
  readonly login: string;
  /** Whether tokens were stored (and are now deleted). */
  readonly deleted: boolean;
  /** What the revocation endpoint did not do. */
  readonly notes: readonly string[];
}

function failure(message: string): TetherError {
  return new TetherError(BrokerCode.loginFailed, message);
}

export class Logins {
  readonly store: TokenStore;
  readonly tokens: LoginTokens;
  readonly clock: Clock;
  readonly #o: LoginsOptions;

  constructor(options: LoginsOptions) {
    this.#o = options;
    this.clock = options.clock ?? systemClock;
    this.store = new TokenStore(options.home);
    this.tokens = new LoginTokens({
      store: this.store,
      rowsOf: (name) => {
        const found = this.#installed(name);
        return found?.approved === true ? found.manifest.login : null;
      },
      clock: this.clock,
      log: options.log,
      fetchFor: (extension) => this.#fetchFor(extension),
    });
  }

  /** The `fetch` `extension`'s sign-in requests go through: the given one, or the egress judge's. */
  #fetchFor(extension: string): typeof fetch | undefined {
    if (this.#o.fetch !== undefined) return this.#o.fetch;
    return this.#o.judge === undefined ? undefined : judgedFetch({ extension, ...this.#o.judge });
  }

  #installed(name: string): InstalledLogins | null {
    return this.#o.extension(name);
  }

  /** The row `tether login <extension> [<login>]` means; the error says what to type instead. */
  row(extension: string, login?: string): LoginRow {
    const found = this.#installed(extension);
    if (found === null) throw failure(`no extension '${extension}' is installed; tether list shows what is`);
    const rows = found.manifest.login;
    if (rows.length === 0) throw failure(`'${extension}' declares no [[login]]; nothing to sign in to`);
    if (login === undefined) {
      if (rows.length === 1) return rows[0]!;
      throw failure(
        `'${extension}' declares several logins (${rows.map((r) => r.name).join(", ")}): ` +
          `name one: tether login ${extension} <login>`,
      );
    }
    const row = rows.find((r) => r.name === login);
    if (row === undefined)
      throw failure(`'${extension}' has no login '${login}'; it declares: ${rows.map((r) => r.name).join(", ")}`);
    return row;
  }

  /** Starts a sign-in; `done` settles once the tokens are stored. */
  async start(
    extension: string,
    login?: string,
    options: StartOptions = {},
  ): Promise<Started & { readonly row: LoginRow }> {
    const row = this.row(extension, login);
    if (this.#installed(extension)?.approved !== true) {
      throw failure(
        `'${extension}' is not approved as installed: a sign-in uses the endpoints of the ` +
          `approved manifest. Run tether review ${extension}, then tether approve ${extension}`,
      );
    }
    const flowOptions = {
      clock: this.clock,
      timeoutMs: options.timeoutMs ?? DEFAULT_REDIRECT_TIMEOUT_MS,
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
      ...(options.progress !== undefined ? { progress: options.progress } : {}),
      ...(this.#fetchFor(extension) !== undefined ? { fetch: this.#fetchFor(extension)! } : {}),
    };
    const started =
      row.flow === "device"
        ? await startDevice(row, extension, flowOptions)
        : await startAuthorizationCode(row, extension, flowOptions);
    const done = started.done.then((tokens) => {
      this.store.write(tokens);
      this.#o.log.info(`login ${extension}/${row.name}: signed in`, { extension });
      return tokens;
    });
    done.catch(() => {});
    return { ...started, done, row };
  }

  /** Every login row of the approved extensions. */
  declared(): Array<{ extension: string; row: LoginRow }> {
    return this.#o
      .extensions()
      .filter((e) => e.approved)
      .flatMap((e) => e.manifest.login.map((row) => ({ extension: e.name, row })));
  }

  /** Each declared login of the installed extensions (or of one), with its stored state. */
  status(extension?: string): LoginStatus[] {
    const now = this.clock.now();
    const one = extension === undefined ? null : this.#installed(extension);
    if (extension !== undefined && one === null)
      throw failure(`no extension '${extension}' is installed; tether list shows what is`);
    const installed = one === null ? this.#o.extensions() : [one];
    const out: LoginStatus[] = [];
    for (const ext of [...installed].sort((a, b) => a.name.localeCompare(b.name))) {
      for (const row of ext.manifest.login) {
        let stored: StoredLogin | null = null;
        let problem: string | null = null;
        try {
          stored = this.store.read(ext.name, row.name);
        } catch (err) {
          problem = (err as Error).message;
        }
        out.push(statusOf(ext.name, row, stored, now, problem));
      }
    }
    return out;
  }

  /**
   * Signs out of one login, or of every login of the extension: revokes at the
   * server when a revocation endpoint is declared, deletes the stored tokens.
   * Works for an extension no longer installed too (its files are deleted).
   */
  async logout(extension: string, login?: string): Promise<LogoutReport[]> {
    const rows = this.#installed(extension)?.manifest.login ?? [];
    const stored = this.store
      .list()
      .filter((s) => s.extension === extension)
      .map((s) => s.login);
    const names = login !== undefined ? [login] : [...new Set([...rows.map((r) => r.name), ...stored])];
    if (login !== undefined && !rows.some((r) => r.name === login) && !stored.includes(login)) {
      throw failure(
        `'${extension}' has no login '${login}' and nothing is stored under that ` +
          `name${rows.length > 0 ? `; it declares: ${rows.map((r) => r.name).join(", ")}` : ""}`,
      );
    }
    const reports: LogoutReport[] = [];
    for (const name of names) {
      const row = rows.find((r) => r.name === name);
      let tokens: StoredLogin | null = null;
      try {
        tokens = this.store.read(extension, name);
      } catch {
        // An unreadable file is deleted all the same: logout is how it is cleared.
      }
      const notes =
        row !== undefined && tokens !== null
          ? await revokeAtServer(
              row,
              tokens,
              this.#fetchFor(extension) !== undefined ? { fetch: this.#fetchFor(extension)! } : {},
            )
          : [];
      const deleted = this.store.remove(extension, name);
      if (deleted) this.#o.log.info(`login ${extension}/${name}: signed out`, { extension });
      reports.push({ extension, login: name, deleted, notes });
    }
    return reports;
  }
}

const perBroker = new WeakMap<KernelHost, Logins>();

/** The broker's one `Logins` (made on first use), on its home and registry. */
export function loginsOf(broker: KernelHost, options: { clock?: Clock; fetch?: typeof fetch } = {}): Logins {
  let logins = perBroker.get(broker);
  if (logins === undefined) {
    const registry = broker.registry;
    const view = (installed: Installed): InstalledLogins => ({
      name: installed.name,
      manifest: installed.manifest,
      approved: registry.status(installed) === "approved",
    });
    logins = new Logins({
      home: broker.home,
      log: broker.log,
      extensions: () => registry.list().map(view),
      extension: (name) => {
        const installed = registry.get(name);
        return installed === null ? null : view(installed);
      },
      // Each sign-in request judged by the operator's policy and audited, as net.fetch is.
      judge: {
        operator: new OperatorPolicySource(broker.home),
        resolve: systemResolver,
        audit: (row) => broker.ledger.audit(row),
      },
      ...options,
    });
    perBroker.set(broker, logins);
  }
  return logins;
}

/** The secrets this broker's sign-ins fill, as the secret injector asks for them (broker/caps/net-secret.ts). */
export function loginSecrets(broker: KernelHost): LoginSecrets {
  return {
    fills: (extension, name) =>
      broker.registry.get(extension)?.manifest.login.some((row) => row.secret === name) ?? false,
    currentToken: (extension, name) => loginsOf(broker).tokens.currentToken(extension, name),
  };
}
