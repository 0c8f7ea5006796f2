/**
 * `svg#activity`: calls, refusals and crashes over time, one row per
 * extension, drawn on the server (no script). Each time slice has three bars
 * side by side; every bar has a `<title>` with its count, and the heights share
 * one scale, so rows compare.
 */
import { html } from "htm/preact";
import type { Activity } from "../../store/audit-pages.js";
import { shown, when } from "./layout.js";

const WIDTH = 960;
const LABEL = 150;
const ROW = 56;
const TOP = 8;
const BOTTOM = 28;

export function activityChart(a: Activity) {
  const rows = Math.max(1, a.series.length);
  const height = TOP + rows * ROW + BOTTOM;
  const slice = (WIDTH - LABEL - 10) / a.buckets;
  const bar = Math.max(1, (slice - 2) / 3);
  const max = Math.max(1, ...a.series.flatMap((s) => [...s.calls, ...s.refusals, ...s.crashes]));
  const span = (a.to - a.from) / a.buckets;
  const bars = (values: readonly number[], kind: "calls" | "refusals" | "crashes", offset: number, base: number) =>
    values.map((n, i) => {
      if (n === 0) return null;
      const h = Math.max(1, (n / max) * (ROW - 14));
      const x = LABEL + i * slice + offset * bar;
      const what = n === 1 ? { calls: "call", refusals: "refusal", crashes: "crash" }[kind] : kind;
      return html`<rect class=${kind} x=${x.toFixed(1)} y=${(base - h).toFixed(1)} width=${bar.toFixed(1)}
        height=${h.toFixed(1)}><title>${`${n} ${what} from ${when(a.from + i * span)}`}</title></rect>`;
    });
  return html`<svg id="activity" xmlns="http://www.w3.org/2000/svg" viewBox=${`0 0 ${WIDTH} ${height}`} role="img"
    aria-label="Calls, refusals and crashes over time per extension">
    <title>Calls, refusals and crashes over time per extension, ${when(a.from)} to ${when(a.to)}</title>
    ${a.series.length === 0 ? html`<text x=${LABEL} y=${TOP + ROW / 2}>no activity in this range</text>` : null}
    ${a.series.map((s, row) => {
      const base = TOP + (row + 1) * ROW - 6;
      return html`<g class="series" data-extension=${s.extension}>
        <text x="4" y=${base - ROW / 2 + 10}>${shown(s.extension)}</text>
        <line class="axis" x1=${LABEL} y1=${base} x2=${WIDTH - 10} y2=${base} />
        ${bars(s.calls, "calls", 0, base)} ${bars(s.refusals, "refusals", 1, base)}${" "}
        ${bars(s.crashes, "crashes", 2, base)}
      </g>`;
    })}
    <text x=${LABEL} y=${height - 8}>${when(a.from)}</text>
    <text x=${WIDTH - 10} y=${height - 8} text-anchor="end">${when(a.to)}</text>
  </svg>`;
}
