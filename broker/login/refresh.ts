/**
 * When a stored access token is refreshed, and the refresh itself (RFC 6749 §6).
 *
 * Due: less than 60 s or less than a tenth of its lifetime left, whichever is
 * more: a long-lived token is renewed well ahead, one that lives under a
 * minute at every use. A token past its expiry is never handed out.
 */
import type { LoginRow } from "../install/login-row.js";
import type { Clock } from "./clock.js";
import { postForm } from "./endpoint.js";
import { tokensFrom } from "./token-response.js";
import type { StoredLogin } from "./token-store.js";

export const REFRESH_MARGIN_MS = 60_000;
export const REFRESH_FRACTION = 0.1;

/** When `stored` falls due for a refresh (ms since the epoch); null when it never expires. */
export function dueAt(stored: StoredLogin): number | null {
  if (stored.expires_at === null) return null;
  const lifetime = Math.max(0, stored.expires_at - stored.obtained_at);
  return stored.expires_at - Math.max(REFRESH_MARGIN_MS, lifetime * REFRESH_FRACTION);
}

export function isDue(stored: StoredLogin, now: number): boolean {
  const due = dueAt(stored);
  return due !== null && now >= due;
}

/** Whether the access token still works at `now`. */
export function isUsable(stored: StoredLogin, now: number): boolean {
  return stored.expires_at === null || now < stored.expires_at;
}

/** Trades the refresh token for new tokens; the answer is checked, not stored. */
export async function refreshTokens(
  row: LoginRow,
  stored: StoredLogin,
  clock: Clock,
  options: { signal?: AbortSignal; fetch?: typeof fetch } = {},
): Promise<StoredLogin> {
  if (stored.refresh_token === null) throw new Error("refreshTokens: no refresh token");
  const answer = await postForm(
    row.token_endpoint,
    {
      grant_type: "refresh_token",
      refresh_token: stored.refresh_token,
      client_id: row.client_id,
      ...(row.scopes.length > 0 ? { scope: row.scopes.join(" ") } : {}),
    },
    { what: "token endpoint", secrets: [stored.refresh_token, stored.access_token], ...options },
  );
  return tokensFrom(answer, row, stored.extension, clock.now(), stored);
}
