/**
 * The sign-ins `tether serve` is running for its clients: `login.start` begins
 * one and answers what to show the person, `login.wait` answers how it ended.
 * A sign-in belongs to the server, not to the connection that started it: a
 * client may reconnect and wait for it by its id. Bounded in number; a
 * finished one is kept for `login.wait` a while, then forgotten.
 */
import { randomBytes } from "node:crypto";
import { BrokerCode, TetherError } from "../base/errors.js";
import type { Logins } from "../login/logins.js";
import type { StoredLogin } from "../login/token-store.js";
import { RpcCode, RpcFailure, ServeCode } from "./protocol.js";

const MAX_PENDING = 16;
/** How long a finished sign-in's outcome waits for its `login.wait`. */
const KEEP_MS = 10 * 60_000;

interface Pending {
  readonly controller: AbortController;
  readonly done: Promise<StoredLogin>;
  endedAt: number | null;
}

export class PendingLogins {
  readonly #logins: Logins;
  readonly #pending = new Map<string, Pending>();

  constructor(logins: Logins) {
    this.#logins = logins;
  }

  #prune(): void {
    const now = Date.now();
    for (const [id, p] of this.#pending) if (p.endedAt !== null && now - p.endedAt > KEEP_MS) this.#pending.delete(id);
  }

  #find(id: string): Pending {
    const found = this.#pending.get(id);
    if (found === undefined)
      throw new RpcFailure(
        RpcCode.unknownLogin,
        ServeCode.unknownLogin,
        `No sign-in '${id.slice(0, 64)}' is running (or it ended and was forgotten); start one with login.start`,
      );
    return found;
  }

  async start(extension: string, login: string | undefined): Promise<Record<string, unknown>> {
    this.#prune();
    if (this.#pending.size >= MAX_PENDING)
      throw new RpcFailure(
        RpcCode.busy,
        ServeCode.busy,
        `${MAX_PENDING} sign-ins are already running; wait for one or cancel it (login.cancel)`,
      );
    const controller = new AbortController();
    const started = await this.#logins.start(extension, login, { signal: controller.signal });
    const id = randomBytes(16).toString("hex");
    const pending: Pending = { controller, done: started.done, endedAt: null };
    started.done.then(
      () => (pending.endedAt = Date.now()),
      () => (pending.endedAt = Date.now()),
    );
    this.#pending.set(id, pending);
    const p = started.prompt;
    return {
      login_id: id,
      extension,
      login: started.row.name,
      flow: p.flow,
      verification_uri: p.verificationUri,
      verification_uri_complete: p.verificationUriComplete,
      user_code: p.userCode,
      authorization_url: p.authorizationUrl,
      redirect_uri: p.redirectUri,
      expires_in: p.expiresIn,
    };
  }

  /** The sign-in's outcome; `signal` (the client going away) stops the waiting, not the sign-in. */
  async wait(id: string, signal: AbortSignal): Promise<Record<string, unknown>> {
    const pending = this.#find(id);
    const stopped = new Promise<never>((_, reject) => {
      const stop = () =>
        reject(
          new RpcFailure(
            RpcCode.invalidRequest,
            ServeCode.invalidRequest,
            "login.wait stopped: the request was cancelled (the sign-in goes on; wait again)",
          ),
        );
      if (signal.aborted) stop();
      else signal.addEventListener("abort", stop, { once: true });
    });
    stopped.catch(() => {});
    try {
      const stored = await Promise.race([pending.done, stopped]);
      const now = this.#logins.clock.now();
      return {
        signed_in: true,
        expires_in: stored.expires_at === null ? null : Math.max(0, Math.floor((stored.expires_at - now) / 1000)),
        refreshable: stored.refresh_token !== null,
      };
    } finally {
      if (pending.endedAt !== null) this.#pending.delete(id);
    }
  }

  cancel(id: string): { cancelled: boolean } {
    const pending = this.#find(id);
    if (pending.endedAt !== null) return { cancelled: false };
    pending.controller.abort(
      new TetherError(
        BrokerCode.loginFailed,
        "the sign-in was cancelled (login.cancel); start another with login.start",
      ),
    );
    return { cancelled: true };
  }

  /** Shutdown: every running sign-in ends. */
  cancelAll(): void {
    for (const p of this.#pending.values())
      if (p.endedAt === null)
        p.controller.abort(
          new TetherError(BrokerCode.loginFailed, "tether serve is shutting down: the sign-in was cancelled"),
        );
  }
}
