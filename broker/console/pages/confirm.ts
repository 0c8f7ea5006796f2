/**
 * The confirmation every action asks for first: `section#confirm` names what
 * will change and the command that does the same, and `form#confirm-form`
 * posts the same action again with its fields and `confirm=yes`.
 */
import { createHash } from "node:crypto";
import { html } from "htm/preact";
import { csrfField, page, shown, type Chrome } from "./layout.js";

/**
 * One line of what will change: a sentence, or a sentence and the texts it
 * lists (rules an extension wrote), each shown as its own item — never joined
 * into the sentence, where a rule holding ", " could pass for two.
 */
export type ChangeLine = string | { readonly text: string; readonly items: readonly string[] };

export interface Confirmation {
  readonly title: string;
  /** Where the form posts (the action's own URL). */
  readonly action: string;
  /** What will change, one line each. */
  readonly changes: readonly ChangeLine[];
  /** The same action as a command line. */
  readonly command: string;
  /** The fields to carry (besides csrf and confirm). */
  readonly fields: ReadonlyArray<readonly [string, string]>;
  /** Where "cancel" goes. */
  readonly back: string;
  readonly danger?: boolean;
  /**
   * The state the action acts on, beyond what the lines say in short (full
   * hashes, the approval it replaces): part of the digest the form carries.
   */
  readonly subject: readonly unknown[];
}

/**
 * The digest of what a confirmation shows and acts on. The confirmation's form
 * carries it (`seen`); the action is done only when the confirmation made
 * again now has the same digest, so what is done is what the operator read.
 */
export function seenOf(c: Confirmation): string {
  return createHash("sha256")
    .update(JSON.stringify([c.action, c.title, c.changes, c.command, c.fields, c.subject]))
    .digest("hex");
}

const STALE =
  "What this does changed since the confirmation that was posted (or the form carried none): nothing was changed. " +
  "Read it again, and confirm if it is still what you mean.";

/**
 * The confirmation; `stale` when a confirm posted was for
 * what no longer stands (this one is then to be read again).
 */
export function confirmPage(c: Confirmation, chrome: Chrome, stale = false): string {
  return page(
    c.title,
    chrome,
    html`${stale ? html`<p class="problem" id="problem">${STALE}</p>` : null}
      <section id="confirm">
        <h1>${shown(c.title)}</h1>
        <ul>
          ${c.changes.map((line) =>
            typeof line === "string"
              ? html`<li>${shown(line)}</li>`
              : html`<li>${shown(line.text)}<ul class="items">${line.items.map(
                  (item) => html`<li>
                <code>${shown(item)}</code></li>`,
                )}</ul></li>`,
          )}
        </ul>
        <p class="muted">The same as: <code id="same-command">${shown(c.command)}</code></p>
      </section>
      <form id="confirm-form" class="panel" method="post" action=${c.action}>
        ${csrfField(chrome.csrf!)}
        ${c.fields.map(([name, value]) => html`<input type="hidden" name=${name} value=${value} />`)}
        <input type="hidden" name="seen" value=${seenOf(c)} />
        <input type="hidden" name="confirm" value="yes" />
        <button id="confirm" class=${c.danger === true ? "danger" : undefined} type="submit">Confirm</button>
        <a href=${c.back}> Cancel</a>
      </form>`,
  );
}
