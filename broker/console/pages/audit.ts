/**
 * `/console/audit`: the filters, the activity chart, the ledger (each call
 * linking to its page) and the capability audit, newest first, a page at a
 * time; `/console/audit/call/ID`: one call, its capability calls and the hook
 * traces about it (`tether audit`, `tether audit --hooks`).
 */
import { html } from "htm/preact";
import type { Activity, AuditPage, CallDetail, CapRow } from "../../store/audit-pages.js";
import { activityChart } from "./chart.js";
import { page, shown, when, type Chrome } from "./layout.js";

/** The filters as given on the query string (what the form shows back). */
export interface AuditQueryText {
  readonly extension: string;
  readonly session: string;
  readonly outcome: string;
  readonly decision: string;
  readonly from: string;
  readonly to: string;
  readonly page: number;
}

const callHref = (id: number) => `/console/audit/call/${id}`;

function queryOf(q: AuditQueryText, page: number): string {
  const params = new URLSearchParams();
  for (const key of ["extension", "session", "outcome", "decision", "from", "to"] as const)
    if (q[key] !== "") params.set(key, q[key]);
  if (page > 1) params.set("page", String(page));
  const text = params.toString();
  return `/console/audit${text === "" ? "" : `?${text}`}`;
}

function capRows(rows: readonly CapRow[]) {
  return rows.map(
    (r) => html`<tr data-cap=${r.id} class=${r.decision}>
      <td>${when(r.at)}</td><td>${shown(r.extension)}</td><td class="mono">${shown(r.sessionId)}</td>
      <td>${r.invocationId !== null ? html`<a href=${callHref(r.invocationId)}>${r.invocationId}</a>` : ""}</td>
      <td>${shown(r.capability)}</td><td class="mono">${shown(r.target)}</td><td class=${r.decision}>${r.decision}</td>
        <td class="mono">${shown(r.rule)}</td><td>${r.bytes}</td><td>${r.secret ?? ""}</td>
    </tr>`,
  );
}

const capHead = html`<thead><tr><th>At</th><th>Extension</th><th>Session</th><th>Call</th><th>Capability</th>
  <th>Target</th><th>Decision</th><th>Rule</th><th>Bytes</th><th>Secret</th></tr></thead>`;

export function auditPageHtml(
  q: AuditQueryText,
  data: AuditPage,
  chart: Activity,
  problem: string | null,
  chrome: Chrome,
): string {
  return page(
    "Audit",
    chrome,
    html`<h1>Audit</h1>
      ${problem !== null ? html`<p class="problem" id="problem">${problem}</p>` : null}
      <form id="filters" class="panel" method="get" action="/console/audit">
        <label>Extension<br /><input type="text" name="extension" value=${q.extension} /></label>
        <label>Session<br /><input type="text" name="session" value=${q.session} /></label>
        <label>Outcome<br /><input type="text" name="outcome" value=${q.outcome} placeholder="ok, crashed, timeout…" />
          </label>
        <label>Decision<br /><select name="decision">${["", "allowed", "denied"].map(
          (d) => html`<option value=${d}
          selected=${q.decision === d}>${d === "" ? "any" : d}</option>`,
        )}</select></label>
        <label>From (UTC)<br /><input type="text" name="from" value=${q.from} placeholder="2026-12-01T10:00 or 2h" />
          </label>
        <label>To (UTC)<br /><input type="text" name="to" value=${q.to} placeholder="2026-12-01T12:00" /></label>
        <button type="submit">Filter</button>
      </form>
      <h2>Activity</h2>
      <p class="legend"><span class="calls">■ calls</span><span class="refusals">■ refusals (denied capability calls)
        </span><span class="crashes">■ crashes (crashed or timed out)</span></p>
      ${activityChart(chart)}
      <h2>Ledger (page ${q.page})</h2>
      <table id="ledger">
        <thead><tr><th>Call</th><th>Started</th><th>Extension</th><th>Session</th><th>Kind</th><th>Name</th>
          <th>Outcome</th><th>ms</th><th>Hooks</th></tr></thead>
        <tbody>
          ${data.ledger.map(
            (r) => html`<tr data-invocation=${r.id} class=${r.outcome === "ok" ? undefined : "refused"}>
              <td><a href=${callHref(r.id)}>${r.id}</a></td><td>${when(r.startedAt)}</td><td>${shown(r.extension)}</td>
                <td class="mono">${shown(r.sessionId)}</td>
              <td>${r.kind}</td><td>${shown(r.name)}</td><td>${shown(r.outcome)}</td><td>${r.durationMs ?? ""}</td>
                <td>${r.hooksBypassed ? "bypassed (--no-hooks)" : ""}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      <h2>Capability audit (page ${q.page})</h2>
      <table id="cap-audit">${capHead}<tbody>${capRows(data.capabilities)}</tbody></table>
      <p class="paging">
        ${q.page > 1 ? html`<a id="prev-page" href=${queryOf(q, q.page - 1)}>← newer</a>` : null}
        ${data.more ? html`<a id="next-page" href=${queryOf(q, q.page + 1)}>older →</a>` : null}
      </p>`,
  );
}

export function callPage(d: CallDetail, chrome: Chrome): string {
  const r = d.invocation;
  return page(
    `Call ${r.id}`,
    chrome,
    html`<h1>Call ${r.id}: ${shown(r.extension)} ${r.kind} ${shown(r.name)}</h1>
      <table id="invocation">
        <tbody>
          <tr><th>Session</th><td class="mono">${shown(r.sessionId)}</td></tr>
          <tr><th>Started</th><td>${when(r.startedAt)}</td></tr>
          <tr><th>Finished</th><td>${when(r.finishedAt)}</td></tr>
          <tr><th>Duration</th><td>${r.durationMs === null ? "" : `${r.durationMs} ms`}</td></tr>
          <tr><th>Outcome</th><td id="outcome">${shown(r.outcome)}</td></tr>
          <tr><th>Strand</th><td class="mono">${shown(r.strand)}</td></tr>
          <tr><th>Hooks</th><td>${r.hooksBypassed ? "bypassed (tether call --no-hooks)" : "asked"}</td></tr>
        </tbody>
      </table>
      <h2>Capability calls</h2>
      <table id="cap-audit">${capHead}<tbody>${capRows(d.capabilities)}</tbody></table>
      <h2>Hook traces</h2>
      <table id="hook-traces">
        <thead><tr><th>At</th><th>Event</th><th>Subject</th><th>Hook of</th><th>Answer</th><th>Detail</th><th>ms</th>
          </tr></thead>
        <tbody>
          ${d.traces.map(
            (t) => html`<tr data-trace=${t.id}>
              <td>${when(t.at)}</td><td>${t.event}</td><td class="mono">${shown(t.subject)}</td>
              <td>${shown(t.extension)}${
                t.hookInvocationId !== null && t.hookInvocationId !== r.id
                  ? html` (<a
                href=${callHref(t.hookInvocationId)}>call ${t.hookInvocationId}</a>)`
                  : null
              }</td>
              <td>${shown(t.answer)}</td><td>${shown(t.detail)}</td><td>${t.durationMs.toFixed(1)}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      <p><a href="/console/audit">Back to the audit</a></p>`,
  );
}
