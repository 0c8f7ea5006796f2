/**
 * `/console/`: every installed extension by status, with what
 * each can reach at a glance (`tether list`, with the reach).
 */
import { html } from "htm/preact";
import type { InstallStatus } from "../../registry/registry.js";
import type { ReachSummary } from "../reach.js";
import { extensionHref, page, shown, type Chrome } from "./layout.js";

export interface ListedExtension {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly status: InstallStatus;
  readonly reach: ReachSummary;
}

const ORDER: readonly InstallStatus[] = ["pending", "changed", "approved", "revoked"];

export function extensionsPage(rows: readonly ListedExtension[], chrome: Chrome): string {
  const sorted = [...rows].sort(
    (a, b) => ORDER.indexOf(a.status) - ORDER.indexOf(b.status) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  const counts = ORDER.map((s) => `${rows.filter((r) => r.status === s).length} ${s}`).join(", ");
  return page(
    "Extensions",
    chrome,
    html`<h1>Extensions</h1>
      <p class="muted">${rows.length === 0 ? "No extensions installed (tether install <folder>)." : counts}</p>
      <table id="extensions">
        <thead><tr><th>Extension</th><th>Version</th><th>Status</th><th>Can reach</th><th>Description</th></tr></thead>
        <tbody>
          ${sorted.map(
            (r) => html`<tr data-extension=${r.name} data-status=${r.status}>
              <td><a class="review" href=${extensionHref(r.name)}>${shown(r.name)}</a></td>
              <td>${shown(r.version)}</td>
              <td><span class=${`status status-${r.status}`}>${r.status}</span></td>
              <td class="reach">
                ${
                  r.reach.net.length === 0
                    ? html`<span>no network</span>
                  `
                    : r.reach.net.map((rule) => html`<div class="mono">${shown(rule)}</div>`)
                }
                <div class="muted">${r.reach.net.length > 0 ? `(${r.reach.as}) ` : ""}${r.reach.adds.join("; ")}</div>
              </td>
              <td>${shown(r.description)}</td>
            </tr>`,
          )}
        </tbody>
      </table>`,
  );
}
