/**
 * What both sign-in flows hand back: the prompt the operator acts on (a URL to
 * open, or a code to enter), and a promise that settles once the tokens are
 * obtained or the sign-in failed. The CLI prints the prompt; `tether serve`
 * answers it to `login.start` and the outcome to `login.wait`.
 */
import type { LoginFlow } from "../install/login-row.js";
import type { Clock } from "./clock.js";
import type { StoredLogin } from "./token-store.js";

export interface Prompt {
  readonly flow: LoginFlow;
  /** device: where to enter the user code; authorization_code: the URL to open (the authorization URL). */
  readonly verificationUri: string;
  /** device, when the server offers it: the URL with the code filled in. */
  readonly verificationUriComplete: string | null;
  /** device: the code to enter. */
  readonly userCode: string | null;
  /** authorization_code: the URL to open in a browser. */
  readonly authorizationUrl: string | null;
  /** authorization_code: where the browser is sent back to (the loopback listener). */
  readonly redirectUri: string | null;
  /** Seconds until the prompt stops working (the device code's lifetime, or the wait for the redirect). */
  readonly expiresIn: number;
}

export interface Started {
  readonly prompt: Prompt;
  /** The tokens (not yet stored), or the failure; a cancelled sign-in rejects with the signal's reason. */
  readonly done: Promise<StoredLogin>;
}

export interface FlowOptions {
  readonly clock: Clock;
  /** Cancels the sign-in (Ctrl-C, login.cancel, shutdown). */
  readonly signal?: AbortSignal;
  /** authorization_code: how long to wait for the redirect. */
  readonly timeoutMs: number;
  /** Progress lines for a person (never a token or a code). */
  readonly progress?: (line: string) => void;
  readonly fetch?: typeof fetch;
}
