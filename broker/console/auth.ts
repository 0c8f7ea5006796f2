/**
 * The console's sign-in: the serve token is given once, on the login page, and
 * exchanged for a random console-session id kept in an HttpOnly,
 * SameSite=Strict cookie (Path=/console; Secure over TLS). The sessions live
 * in this process's memory only and end after `idleMs` without a request, at
 * logout, or when the server stops. Each has its own CSRF token, which every
 * form carries; a state change also needs the request's `Origin` and
 * `Sec-Fetch-Site`, when the browser sends them, to say it came from the
 * console's own origin (`requestProblem`).
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { hostProblem } from "../base/loopback-host.js";

export const COOKIE = "tether_console";

/** A console session: who signed in (recorded as `by`), its CSRF token, and a one-shot message for the next page. */
export interface ConsoleSession {
  readonly id: string;
  readonly csrf: string;
  /** The name approvals and revocations made here are recorded as made by. */
  readonly operator: string;
  lastSeen: number;
  /** When it was signed in: it ends `maxAgeMs` later however busy it is. */
  readonly createdAt: number;
  flash: string | null;
}

export interface ConsoleSessionOptions {
  /** How long a session lasts without a request (default 30 minutes). */
  readonly idleMs?: number;
  /** How long a session lasts at most, in use or not (default 12 hours): a sign-in is not for ever. */
  readonly maxAgeMs?: number;
  /** At most this many at once; signing in past it ends the least recently used (default 64). */
  readonly max?: number;
  /** The clock (tests give their own). */
  readonly now?: () => number;
}

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

/** Whether two secrets are equal, in constant time whatever their lengths. */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

export class ConsoleSessions {
  readonly #sessions = new Map<string, ConsoleSession>();
  readonly #idleMs: number;
  readonly #maxAgeMs: number;
  readonly #max: number;
  readonly #now: () => number;

  constructor(options: ConsoleSessionOptions = {}) {
    this.#idleMs = options.idleMs ?? 30 * 60_000;
    this.#maxAgeMs = options.maxAgeMs ?? 12 * 3_600_000;
    this.#max = options.max ?? 64;
    this.#now = options.now ?? Date.now;
  }

  /** A new session for `operator` (the caller checked the token). */
  create(operator: string): ConsoleSession {
    this.#sweep();
    while (this.#sessions.size >= this.#max) {
      const oldest = [...this.#sessions.values()].reduce((a, b) => (a.lastSeen <= b.lastSeen ? a : b));
      this.#sessions.delete(oldest.id);
    }
    const session: ConsoleSession = {
      id: randomBytes(32).toString("base64url"),
      csrf: randomBytes(32).toString("base64url"),
      operator,
      lastSeen: this.#now(),
      createdAt: this.#now(),
      flash: null,
    };
    this.#sessions.set(session.id, session);
    return session;
  }

  /** The session a request's cookie names, if it is live (its idle clock restarts); null otherwise. */
  find(req: IncomingMessage): ConsoleSession | null {
    // Every cookie of the name, not the first: a neighbour on another port of this
    // host can set one (cookies ignore ports), which the browser may send first.
    const session = cookiesOf(req.headers.cookie, COOKIE)
      .map((id) => this.#sessions.get(id))
      .find((s) => s !== undefined);
    if (session === undefined) return null;
    const id = session.id;
    const now = this.#now();
    if (this.#expired(session, now)) {
      this.#sessions.delete(id);
      return null;
    }
    session.lastSeen = now;
    return session;
  }

  end(session: ConsoleSession): void {
    this.#sessions.delete(session.id);
  }

  get size(): number {
    return this.#sessions.size;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [id, s] of this.#sessions) if (this.#expired(s, now)) this.#sessions.delete(id);
  }

  #expired(s: ConsoleSession, now: number): boolean {
    return now - s.lastSeen > this.#idleMs || now - s.createdAt > this.#maxAgeMs;
  }
}

/** Every value a Cookie header gives the cookie `name`, in order. */
export function cookiesOf(header: string | undefined, name: string): string[] {
  if (header === undefined) return [];
  const values: string[] = [];
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) values.push(part.slice(eq + 1).trim());
  }
  return values;
}

/** One cookie's (first) value from a Cookie header; null when absent. */
export function cookieOf(header: string | undefined, name: string): string | null {
  return cookiesOf(header, name)[0] ?? null;
}

/** Whether the request came over TLS (the cookie is then Secure). */
export function overTls(req: IncomingMessage): boolean {
  return (req.socket as Partial<TLSSocket>).encrypted === true;
}

/** The Set-Cookie value that hands a browser its session. */
export function sessionCookie(session: ConsoleSession, secure: boolean): string {
  return `${COOKIE}=${session.id}; HttpOnly; SameSite=Strict; Path=/console${secure ? "; Secure" : ""}`;
}

/** The Set-Cookie value that clears it. */
export function clearedCookie(secure: boolean): string {
  return `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0${secure ? "; Secure" : ""}`;
}

export { hostProblem };

/** The console's own origin, as the browser names it. */
export function ownOrigin(req: IncomingMessage): string {
  return `${overTls(req) ? "https" : "http"}://${(req.headers.host ?? "").toLowerCase()}`;
}

/**
 * Why a state-changing request is refused as coming from elsewhere, or null:
 * an `Origin` other than the console's own, or a `Sec-Fetch-Site` other than
 * `same-origin`. (A browser sends both on a form's POST; a client that sends
 * neither still needs the session's cookie and its CSRF token.)
 */
export function crossSiteProblem(req: IncomingMessage): string | null {
  const origin = req.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== ownOrigin(req))
    return `the request came from another origin (${origin})`;
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin") return `the browser says the request is ${site}, not same-origin`;
  return null;
}

/** Whether a form's csrf field is the session's token. */
export function csrfMatches(session: ConsoleSession, given: string | undefined): boolean {
  return given !== undefined && given !== "" && sameSecret(given, session.csrf);
}

export interface SignInLimitOptions {
  /** At most this many failed sign-ins per window (default 10). */
  readonly failures?: number;
  /** The window, in ms (default a minute). */
  readonly windowMs?: number;
  readonly now?: () => number;
}

/**
 * The bound on failed sign-ins: past `failures` wrong tokens within
 * `windowMs`, every sign-in — the right token too — is refused until the
 * oldest of them leaves the window. The token (32 random bytes) cannot be
 * guessed anyway; the bound keeps a local client from trying at the server's
 * speed. A browser page elsewhere cannot spend it: its posts are refused by
 * the origin check before the token is looked at.
 */
export class SignInLimit {
  readonly #failures: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  #failed: number[] = [];

  constructor(options: SignInLimitOptions = {}) {
    this.#failures = options.failures ?? 10;
    this.#windowMs = options.windowMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** Null when a sign-in may be tried now; else in how many seconds one may. */
  blocked(): number | null {
    const now = this.#now();
    this.#failed = this.#failed.filter((at) => now - at < this.#windowMs);
    if (this.#failed.length < this.#failures) return null;
    return Math.max(1, Math.ceil((this.#failed[0]! + this.#windowMs - now) / 1000));
  }

  failed(): void {
    this.#failed.push(this.#now());
  }
}
