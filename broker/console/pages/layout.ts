/**
 * The frame of every console page: the stylesheet (the only asset), the
 * navigation, who is signed in, the logout form, the one-shot `#flash`. Pages
 * are rendered on the server by preact (which escapes every text and
 * attribute); text that came from an extension also has its control
 * characters written out (`shown`).
 */
import { html } from "htm/preact";
import type { ComponentChildren, VNode } from "preact";
import { render } from "preact-render-to-string";
import { visibleText } from "../../registry/review.js";
import { css } from "../assets.js";

/**
 * Text an extension (or anyone but the broker) wrote, as the page shows
 * it: control characters and bidirectional overrides written out.
 */
export const shown = (text: string): string => visibleText(text);

/**
 * Control characters and bidirectional overrides but the line break
 * (which a `<pre>` needs), written out as `shown` writes them.
 */
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g;

/**
 * Every text of a page's tree with its controls written out: the one path all
 * page text takes, whether or not the page remembered `shown` (preact then
 * escapes it for HTML). Attributes are left as they are: preact escapes them,
 * and a form's values must be the exact texts they stand for.
 */
function visibleTree(node: ComponentChildren): ComponentChildren {
  if (typeof node === "string") return node.replace(HIDDEN, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
  if (Array.isArray(node)) return node.map(visibleTree);
  if (node !== null && typeof node === "object" && "props" in node) {
    const vnode = node as VNode<{ children?: ComponentChildren }>;
    if (vnode.props.children !== undefined) vnode.props.children = visibleTree(vnode.props.children);
  }
  return node;
}

/** What the frame shows around a page. */
export interface Chrome {
  /** The console session's CSRF token (null: not signed in). */
  readonly csrf: string | null;
  readonly operator?: string;
  readonly flash?: string | null;
  /** What the operator must know now, on every page (a fleet's refused approvals, its staleness). */
  readonly alerts?: readonly string[];
}

/** The hidden CSRF field every form carries. */
export const csrfField = (csrf: string) => html`<input type="hidden" name="csrf" value=${csrf} />`;

/** A time as the console shows it (UTC, to the second). */
export const when = (ms: number | null | undefined): string =>
  ms === null || ms === undefined ? "" : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

export const extensionHref = (name: string): string => `/console/ext/${encodeURIComponent(name)}`;

/** A whole page: `<!doctype html>` and the frame around `body`. */
export function page(title: string, chrome: Chrome, body: ComponentChildren): string {
  const signedIn = chrome.csrf !== null;
  const tree = html`<html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>${title} · Tether console</title>
      <link rel="stylesheet" href=${css().path} />
    </head>
    <body>
      <header class="top">
        <span class="brand">Tether console</span>
        ${
          signedIn
            ? html`<nav><a href="/console/">Extensions</a><a href="/console/audit">Audit</a>
              <a href="/console/sessions">Sessions</a></nav>
              <span class="muted">signed in as ${shown(chrome.operator ?? "")}</span>
              <form id="logout" method="post" action="/console/logout">${csrfField(chrome.csrf!)}
                <button type="submit">Log out</button></form>`
            : null
        }
      </header>
      <main>
        ${
          chrome.alerts !== undefined && chrome.alerts.length > 0
            ? html`<ul id="alerts" role="alert">
          ${chrome.alerts.map((a) => html`<li class="problem">${shown(a)}</li>`)}</ul>`
            : null
        }
        ${chrome.flash ? html`<p id="flash" role="status">${shown(chrome.flash)}</p>` : null}
        ${body}
      </main>
    </body>
  </html>`;
  return `<!doctype html>\n${render(visibleTree(tree) as VNode)}`;
}

/** A page that says what went wrong (401, 403, 404, 413…): never a stack trace. */
export function problemPage(title: string, message: string, chrome: Chrome, back?: string): string {
  return page(
    title,
    chrome,
    html`<h1>${title}</h1><p class="problem" id="problem">${shown(message)}</p>${
      back !== undefined
        ? html`<p>
      <a href=${back}>Back</a></p>`
        : null
    }`,
  );
}
