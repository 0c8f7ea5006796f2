/**
 * What `tether logins`, `login.status` and `tether login` say about a sign-in:
 * whether there is one, since when, how long the access token has left and
 * whether it can be refreshed. Never a token.
 */
import type { LoginRow } from "../install/login-row.js";
import { isUsable } from "./refresh.js";
import type { StoredLogin } from "./token-store.js";

export interface LoginStatus {
  readonly extension: string;
  readonly login: string;
  readonly description: string;
  readonly flow: LoginRow["flow"];
  /** The `[[secret]]` it fills. */
  readonly secret: string;
  /** A usable access token is stored (or a refresh token that can get one). */
  readonly signed_in: boolean;
  /** ISO time of the operator's sign-in; null when none is stored. */
  readonly signed_in_at: string | null;
  /** Seconds the access token has left (0: expired); null when none is stored or the server gave no expiry. */
  readonly expires_in: number | null;
  readonly refreshable: boolean;
  /** Why the stored sign-in cannot be read (a file mode, a damaged file), when it cannot. */
  readonly problem: string | null;
}

export function statusOf(
  extension: string,
  row: LoginRow,
  stored: StoredLogin | null,
  now: number,
  problem: string | null = null,
): LoginStatus {
  const refreshable = stored !== null && stored.refresh_token !== null;
  return {
    extension,
    login: row.name,
    description: row.description,
    flow: row.flow,
    secret: row.secret,
    signed_in: stored !== null && (isUsable(stored, now) || refreshable),
    signed_in_at: stored === null ? null : new Date(stored.signed_in_at).toISOString(),
    expires_in: stored?.expires_at == null ? null : Math.max(0, Math.floor((stored.expires_at - now) / 1000)),
    refreshable,
    problem,
  };
}

/** One line: `github: signed in as of <time>, expires in 3540 s, refreshable: yes`. */
export function statusLine(s: LoginStatus): string {
  if (s.problem !== null) return `${s.login}: cannot be read: ${s.problem}`;
  if (s.signed_in_at === null) return `${s.login}: not signed in (tether login ${s.extension} ${s.login})`;
  const expiry =
    s.expires_in === null ? "no expiry given" : s.expires_in === 0 ? "expired" : `expires in ${s.expires_in} s`;
  const state = s.signed_in ? "signed in" : `signed out (expired; tether login ${s.extension} ${s.login})`;
  return `${s.login}: ${state} as of ${s.signed_in_at}, ${expiry}, refreshable: ${s.refreshable ? "yes" : "no"}`;
}

/** The listing: each extension, then its logins indented. */
export function renderStatuses(statuses: readonly LoginStatus[]): string {
  if (statuses.length === 0) return "no installed extension declares a [[login]]";
  const lines: string[] = [];
  let last = "";
  for (const s of statuses) {
    if (s.extension !== last) lines.push(s.extension);
    last = s.extension;
    lines.push(`  ${statusLine(s)}`);
  }
  return lines.join("\n");
}
