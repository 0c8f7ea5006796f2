/**
 * Signing out: the tokens are revoked at the server when the login declares a
 * `revocation_endpoint` (RFC 7009: the refresh token first, which ends the
 * grant, then the access token), and deleted here whatever the server says. A
 * revocation that fails is a note, not a reason to keep the tokens.
 */
import type { LoginRow } from "../install/login-row.js";
import { postForm } from "./endpoint.js";
import type { StoredLogin } from "./token-store.js";

/** Asks the revocation endpoint to revoke `stored`'s tokens; the notes say what did not work. */
export async function revokeAtServer(
  row: LoginRow,
  stored: StoredLogin,
  options: { fetch?: typeof fetch; signal?: AbortSignal } = {},
): Promise<string[]> {
  if (row.revocation_endpoint === undefined) return [];
  const notes: string[] = [];
  const tokens: Array<[string, string]> = [];
  if (stored.refresh_token !== null) tokens.push([stored.refresh_token, "refresh_token"]);
  tokens.push([stored.access_token, "access_token"]);
  for (const [token, hint] of tokens) {
    try {
      await postForm(
        row.revocation_endpoint,
        { token, token_type_hint: hint, client_id: row.client_id },
        { what: "revocation endpoint", secrets: [token], emptyOk: true, ...options },
      );
    } catch (err) {
      notes.push(`revoking the ${hint.replace("_", " ")} failed: ${(err as Error).message}`);
    }
  }
  return notes;
}
