/**
 * The confirmation every action asks for first: `section#confirm` names what
 * will change and the command that does the same, and `form#confirm-form`
 * posts the same action again with its fields and `confirm=yes`.
 */
import { html } from "htm/preact";
import { csrfField, page, shown, type Chrome } from "./layout.js";

export interface Confirmation {
  readonly title: string;
  /** Where the form posts (the action's own URL). */
  readonly action: string;
  /** What will change, one line each. */
  readonly changes: readonly string[];
  /** The same action as a command line. */
  readonly command: string;
  /** The fields to carry (besides csrf and confirm). */
  readonly fields: ReadonlyArray<readonly [string, string]>;
  /** Where "cancel" goes. */
  readonly back: string;
  readonly danger?: boolean;
}

export function confirmPage(c: Confirmation, chrome: Chrome): string {
  return page(
    c.title,
    chrome,
    html`<section id="confirm">
        <h1>${shown(c.title)}</h1>
        <ul>${c.changes.map((line) => html`<li>${shown(line)}</li>`)}</ul>
        <p class="muted">The same as: <code id="same-command">${shown(c.command)}</code></p>
      </section>
      <form id="confirm-form" class="panel" method="post" action=${c.action}>
        ${csrfField(chrome.csrf!)}
        ${c.fields.map(([name, value]) => html`<input type="hidden" name=${name} value=${value} />`)}
        <input type="hidden" name="confirm" value="yes" />
        <button id="confirm" class=${c.danger === true ? "danger" : undefined} type="submit">Confirm</button>
        <a href=${c.back}> Cancel</a>
      </form>`,
  );
}
