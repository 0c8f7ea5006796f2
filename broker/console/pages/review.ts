/**
 * `/console/ext/NAME`: what `tether review NAME` prints, as HTML — the very
 * lines `reviewLines` gives the command, each in its section (egress rules one
 * `li[data-rule]` each, with their decoded form; on an upgrade `#diff` with each
 * widening marked) — then the tools' schemas from the manifest, and the
 * actions: approve (all, or narrowed to the boxes left checked), revoke,
 * uninstall.
 */
import { html } from "htm/preact";
import type { Approval, Installed } from "../../registry/registry.js";
import type { SourceDiff } from "../../registry/source-changes.js";
import { reviewLines, type Review, type ReviewLine, type ReviewSection } from "../../registry/review.js";
import { csrfField, extensionHref, page, shown, when, type Chrome } from "./layout.js";

/** Each section's heading, in the order the page shows them (the order `tether review` prints them). */
const SECTIONS: ReadonlyArray<readonly [ReviewSection, string]> = [
  ["rules", "What it can reach"],
  ["secrets", "Secrets"],
  ["tools", "Tools"],
  ["hooks", "Hooks"],
  ["commands", "Commands"],
  ["contributions", "Session contributions"],
  ["logins", "Sign-ins"],
  ["limits", "Limits"],
  ["storage", "Database"],
  ["migrations", "Migrations"],
  ["init", "Initializer"],
  ["diff", "Changed since the approval"],
  ["next", "Next"],
];

/** Shown in a section `tether review` prints nothing in (the page always has the section). */
const NONE: Partial<Record<ReviewSection, string>> = {
  secrets: "No secrets.",
  commands: "It adds no commands.",
  contributions: "None.",
};

/** A section's lines as items: each line with the detail lines under it. */
function items(lines: readonly ReviewLine[]) {
  const groups: Array<{ head: ReviewLine; details: ReviewLine[] }> = [];
  for (const line of lines) {
    if (line.text.trim() === "") continue;
    const last = groups[groups.length - 1];
    if (line.detail === true && last !== undefined) last.details.push(line);
    else groups.push({ head: line, details: [] });
  }
  return groups.map(
    (g) => html`<li data-rule=${g.head.rule} class=${g.head.widening === true ? "widening" : undefined}>
      ${shown(g.head.text.trim())}
      ${
        g.details.length > 0
          ? html`<ul>${g.details.map(
              (d) => html`<li
        class=${d.widening === true ? "widening" : undefined}>${shown(d.text.trim())}</li>`,
            )}</ul>`
          : null
      }
    </li>`,
  );
}

function toolSchemas(installed: Installed) {
  return installed.manifest.tool.map(
    (tool) => html`<details class="tool-schema" data-tool=${tool.name}>
      <summary>${shown(tool.name)}: its parameters (JSON Schema)</summary>
      <pre class="mono">${shown(JSON.stringify(tool.parameters, null, 2)).replace(/\\u\{a\}/g, "\n")}</pre>
    </details>`,
  );
}

export interface ReviewPage {
  readonly installed: Installed;
  readonly review: Review;
  /** The latest approval (revoked or not). */
  readonly approval: Approval | null;
  /** On an upgrade, how each source file changed (what `tether review --diff` adds). */
  readonly sources: readonly SourceDiff[];
}

/** `tether review --diff`'s part: each changed file's unified diff, its control characters written out. */
function sourceSection(sources: readonly SourceDiff[]) {
  if (sources.length === 0) return null;
  return html`<section id="source-diff">
    <h2>Source changes since the approval</h2>
    ${sources.map(
      (d) => html`<details data-path=${d.path}>
        <summary><code>${shown(d.path)}</code> (${d.change})</summary>
        ${
          d.unified === null || d.unified === undefined
            ? html`<p class="muted">${shown(d.note ?? "")}</p>`
            : html`<pre class="mono">${d.unified.split(/\r?\n/).map(
                (line) => html`<span
              class=${line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : undefined}>${shown(line)}${"\n"}
                </span>`,
              )}</pre>`
        }
      </details>`,
    )}
  </section>`;
}

export function reviewPage({ installed, review, approval, sources }: ReviewPage, chrome: Chrome): string {
  const lines = reviewLines(review, installed);
  const [title, status] = lines.filter((l) => l.section === "summary" && l.text !== "");
  const name = review.name;
  const inForce = approval !== null && approval.revokedAt === null;
  const sections = SECTIONS.filter(([id]) => id !== "diff" || review.diff !== null).map(([id, heading]) => {
    const mine = lines.filter((l) => l.section === id && l.text.trim() !== "");
    if (mine.length === 0 && NONE[id] === undefined && !["rules", "tools", "hooks", "limits"].includes(id)) return null;
    return html`<section id=${id}>
      <h2>${heading}</h2>
      <ul>${mine.length > 0 ? items(mine) : html`<li class="muted">${NONE[id] ?? ""}</li>`}</ul>
      ${id === "tools" ? toolSchemas(installed) : null}
    </section>`;
  });
  const withheld = new Set(review.withheld);
  return page(
    `Review ${name}`,
    chrome,
    html`<h1>${shown(title?.text ?? name)}</h1>
      <p id="status"><span class=${`status status-${review.status}`}>${review.status}
        </span> ${shown((status?.text ?? "").replace(/^status: \w+/, ""))}
        ${
          approval !== null
            ? html`<span
          class="muted"> · latest approval by ${shown(approval.approvedBy)} at ${when(approval.approvedAt)}</span>
            `
            : null
        }</p>
      ${sections}
      ${sourceSection(sources)}
      <div class="actions">
        <form id="approve" method="post" action=${`${extensionHref(name)}/approve`}>
          ${csrfField(chrome.csrf!)}
          <h2>Approve ${shown(installed.version)}</h2>
          ${
            review.requested.net.length > 0
              ? html`<p class="muted">Unchecking a rule leaves it out (tether approve --only).</p>
                ${review.requested.net.map(
                  (rule) =>
                    html`<label><input type="checkbox" name="rule" value=${rule} checked=${!withheld.has(rule)}
                      /> <code>${shown(rule)}</code>${
                        withheld.has(rule)
                          ? html` <span
                        class="muted">(withheld by an earlier --only)</span>`
                          : null
                      }</label>`,
                )}`
              : html`<p class="muted">It asks for no network.</p>`
          }
          <button id="approve" type="submit">Approve…</button>
        </form>
        ${
          inForce
            ? html`<form id="revoke" method="post" action=${`${extensionHref(name)}/revoke`}>
              ${csrfField(chrome.csrf!)}
              <h2>Revoke</h2>
              <p class="muted">Calls are refused from then on.</p>
              <button id="revoke" class="danger" type="submit">Revoke…</button>
            </form>`
            : null
        }
        <form id="uninstall" method="post" action=${`${extensionHref(name)}/uninstall`}>
          ${csrfField(chrome.csrf!)}
          <h2>Uninstall</h2>
          <p class="muted">Revokes and removes the install; its data stays.</p>
          <button id="uninstall" class="danger" type="submit">Uninstall…</button>
        </form>
      </div>`,
  );
}
