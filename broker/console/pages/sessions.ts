/**
 * `/console/sessions`: the server's live sessions, each with its
 * active extensions, why the others are not, and reload / close.
 */
import { html } from "htm/preact";
import type { LiveSession } from "../live-sessions.js";
import { csrfField, page, shown, type Chrome } from "./layout.js";

export const sessionHref = (id: string) => `/console/sessions/${encodeURIComponent(id)}`;

export function sessionsPage(sessions: readonly LiveSession[], chrome: Chrome): string {
  return page(
    "Sessions",
    chrome,
    html`<h1>Live sessions</h1>
      <p class="muted">
        ${sessions.length === 0 ? "No session is open on this server." : `${sessions.length} open on this server.`}</p>
      <table id="sessions">
        <thead><tr><th>Session</th><th>Workspace</th><th>Active</th><th>Not active</th><th></th></tr></thead>
        <tbody>
          ${sessions.map((s) => {
            const active = s.extensions.filter((e) => e.state === "active");
            const others = s.extensions.filter((e) => e.state !== "active");
            return html`<tr data-session=${s.id}>
              <td class="mono">${shown(s.id)}</td>
              <td class="mono">${shown(s.workspace)}</td>
              <td class="active">${
                active.length === 0
                  ? html`<span class="muted">none</span>
                `
                  : active.map((e) => html`<div data-active=${e.name}>${shown(e.name)}</div>`)
              }</td>
              <td class="inactive">
                ${others.map(
                  (e) => html`<div data-inactive=${e.name}>
                  <strong>${shown(e.name)}</strong> (${e.state}): <span class="reason">${shown(e.reason ?? "")}</span>
                    </div>`,
                )}
              </td>
              <td>
                <form class="reload inline" method="post" action=${`${sessionHref(s.id)}/reload`}>
                  ${csrfField(chrome.csrf!)}<button type="submit">Reload…</button></form>
                <form class="close inline" method="post" action=${`${sessionHref(s.id)}/close`}>
                  ${csrfField(chrome.csrf!)}<button class="danger" type="submit">Close…</button></form>
              </td>
            </tr>`;
          })}
        </tbody>
      </table>`,
  );
}
