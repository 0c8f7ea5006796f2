/**
 * The authorization-code sign-in with PKCE (RFC 6749 §4.1, RFC 7636, RFC 8252):
 * a loopback listener, the URL for the operator's browser (with `state` and the
 * S256 challenge), the redirect checked, then the code exchanged once at the
 * token endpoint with the verifier.
 */
import { BrokerCode, TetherError } from "../base/errors.js";
import type { LoginRow } from "../install/login-row.js";
import { postForm } from "./endpoint.js";
import type { FlowOptions, Started } from "./flow.js";
import { LoopbackRedirect } from "./loopback.js";
import { newPkce, newState } from "./pkce.js";
import { tokensFrom } from "./token-response.js";

type CodeRow = Extract<LoginRow, { flow: "authorization_code" }>;

export async function startAuthorizationCode(row: CodeRow, extension: string, options: FlowOptions): Promise<Started> {
  const pkce = newPkce();
  const state = newState();
  const listener = await LoopbackRedirect.open(state);
  const url = new URL(row.authorization_endpoint);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", row.client_id);
  url.searchParams.set("redirect_uri", listener.redirectUri);
  if (row.scopes.length > 0) url.searchParams.set("scope", row.scopes.join(" "));
  url.searchParams.set("state", state);
  url.searchParams.set("code_challenge", pkce.challenge);
  url.searchParams.set("code_challenge_method", pkce.method);
  const authorizationUrl = url.toString();

  const stop = new AbortController();
  const signal = options.signal !== undefined ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const timedOut = options.clock.sleep(options.timeoutMs, signal).then(() => {
    const stray = listener.refused();
    const ignored =
      stray === 0
        ? ""
        : ` (${stray} request${stray === 1 ? "" : "s"} with another sign-in's ` +
          `state ${stray === 1 ? "was" : "were"} refused and ignored)`;
    throw new TetherError(
      BrokerCode.loginFailed,
      `no redirect reached ${listener.redirectUri} within ${Math.round(options.timeoutMs / 1000)} ` +
        `s${ignored}; run tether login again (--timeout gives more time)`,
    );
  });
  const done = (async () => {
    try {
      const callback = await Promise.race([listener.callback, timedOut]);
      options.progress?.("redirect received; exchanging the code at the token endpoint");
      try {
        const answer = await postForm(
          row.token_endpoint,
          {
            grant_type: "authorization_code",
            code: callback.code,
            redirect_uri: listener.redirectUri,
            client_id: row.client_id,
            code_verifier: pkce.verifier,
          },
          {
            what: "token endpoint",
            signal,
            secrets: [callback.code, pkce.verifier],
            ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
          },
        );
        const tokens = tokensFrom(answer, row, extension, options.clock.now(), null);
        callback.reply(true, "Signed in. You may close this tab.");
        return tokens;
      } catch (err) {
        callback.reply(false, "The sign-in failed; the terminal that started it says why.");
        throw err;
      }
    } finally {
      stop.abort(new Error("the sign-in ended"));
      await listener.close();
    }
  })();
  timedOut.catch(() => {});
  return {
    prompt: {
      flow: "authorization_code",
      verificationUri: authorizationUrl,
      verificationUriComplete: null,
      userCode: null,
      authorizationUrl,
      redirectUri: listener.redirectUri,
      expiresIn: Math.round(options.timeoutMs / 1000),
    },
    done,
  };
}
