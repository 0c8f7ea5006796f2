/**
 * The login page: the serve token (or the console token),
 * exchanged once for a session cookie; the name to record as `by`.
 */
import { html } from "htm/preact";
import { page } from "./layout.js";

export function loginPage(defaultOperator: string, problem: string | null = null): string {
  return page(
    "Sign in",
    { csrf: null },
    html`<h1>Sign in</h1>
      ${problem !== null ? html`<p class="problem" id="problem">${problem}</p>` : null}
      <form id="login" class="panel" method="post" action="/console/login">
        <label>Token (the contents of the serve token file)<br /><input type="password" name="token" autocomplete="off"
          required /></label>
        <label>Approve and revoke as<br /><input type="text" name="operator" placeholder=${defaultOperator}
          maxlength="64" /></label>
        <p class="muted">
          Left empty, what you approve or revoke is recorded as made by ${defaultOperator}
            , as tether approve records it.
        </p>
        <button type="submit">Sign in</button>
      </form>`,
  );
}
