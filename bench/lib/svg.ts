/** A hand-written SVG line chart (no dependency): a few series over the same x values. */

export interface Series {
  readonly name: string;
  readonly color: string;
  /** One value per x; NaN leaves a gap. */
  readonly ys: readonly number[];
  readonly dashed?: boolean;
}

export interface LineChart {
  readonly title: string;
  readonly subtitle?: string;
  readonly xLabel: string;
  readonly yLabel: string;
  /** The x values, placed evenly (so 1, 2, 4, 8 sit on a log scale). */
  readonly xs: readonly number[];
  readonly series: readonly Series[];
  /** A logarithmic y axis (ticks at 1, 2 and 5 times powers of ten), so series far apart stay readable. */
  readonly logY?: boolean;
}

function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** 1, 2 or 5 times a power of ten: the first such step that cuts `max` into at most `ticks` parts. */
function niceStep(max: number, ticks: number): number {
  const raw = max / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

function label(value: number): string {
  return value >= 1000 ? `${(value / 1000).toLocaleString("en-US")}k` : String(value);
}

export function lineChart(chart: LineChart): string {
  const width = 700;
  const height = 400;
  const left = 72;
  const right = 220;
  const top = chart.subtitle === undefined ? 48 : 64;
  const bottom = 56;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const finite = chart.series.flatMap((s) => s.ys.filter((y) => Number.isFinite(y) && y > 0));
  const top1 = Math.max(1, ...finite);
  let ticks: number[];
  let y: (v: number) => number;
  if (chart.logY === true) {
    // From the 1-2-5 tick at or below the lowest value to the one at or above the highest.
    const low = Math.min(top1, ...finite);
    const lo = [5, 2, 1].map((m) => m * 10 ** Math.floor(Math.log10(low))).find((t) => t <= low)!;
    const hi = [1, 2, 5, 10].map((m) => m * 10 ** Math.floor(Math.log10(top1))).find((t) => t >= top1)!;
    ticks = [];
    for (let p = 10 ** Math.floor(Math.log10(lo)); p <= hi; p *= 10)
      for (const m of [1, 2, 5]) if (m * p >= lo * 0.9999 && m * p <= hi * 1.0001) ticks.push(m * p);
    const span = Math.log10(hi) - Math.log10(lo);
    y = (v) => top + plotH - ((Math.log10(v) - Math.log10(lo)) / span) * plotH;
  } else {
    const step = niceStep(top1, 5);
    const yMax = Math.ceil(top1 / step) * step;
    ticks = [];
    for (let v = 0; v <= yMax + 1e-9; v += step) ticks.push(v);
    y = (v) => top + plotH - (v / yMax) * plotH;
  }
  const x = (i: number) => left + (chart.xs.length === 1 ? plotW / 2 : (i * plotW) / (chart.xs.length - 1));
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${width}" height="${height}" fill="white"/>`);
  out.push(
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escape(chart.title)}</text>`,
  );
  if (chart.subtitle !== undefined)
    out.push(`<text x="${width / 2}" y="40" text-anchor="middle" fill="#555">${escape(chart.subtitle)}</text>`);
  // Grid and y ticks.
  for (const v of ticks) {
    out.push(
      `<line x1="${left}" y1="${y(v).toFixed(1)}" x2="${left + plotW}" y2="${y(v).toFixed(1)}" stroke="#e4e4e4"/>`,
    );
    out.push(`<text x="${left - 8}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${label(v)}</text>`);
  }
  // Axes and x ticks.
  out.push(`<line x1="${left}" y1="${top + plotH}" x2="${left + plotW}" y2="${top + plotH}" stroke="black"/>`);
  out.push(`<line x1="${left}" y1="${top}" x2="${left}" y2="${top + plotH}" stroke="black"/>`);
  chart.xs.forEach((xv, i) => {
    out.push(
      `<line x1="${x(i).toFixed(1)}" y1="${top + plotH}" x2="${x(i).toFixed(1)}" y2="${top + plotH + 5}" stroke="black"/>`,
    );
    out.push(`<text x="${x(i).toFixed(1)}" y="${top + plotH + 19}" text-anchor="middle">${xv}</text>`);
  });
  out.push(`<text x="${left + plotW / 2}" y="${height - 14}" text-anchor="middle">${escape(chart.xLabel)}</text>`);
  out.push(
    `<text x="18" y="${top + plotH / 2}" text-anchor="middle" transform="rotate(-90 18 ${top + plotH / 2})">${escape(chart.yLabel)}</text>`,
  );
  // Series.
  for (const s of chart.series) {
    const points = s.ys.map((v, i) =>
      Number.isFinite(v) && (chart.logY !== true || v > 0) ? `${x(i).toFixed(1)},${y(v).toFixed(1)}` : null,
    );
    const runs: string[][] = [[]];
    for (const p of points) {
      if (p === null) runs.push([]);
      else runs[runs.length - 1]!.push(p);
    }
    for (const run of runs.filter((r) => r.length > 0)) {
      out.push(
        `<polyline points="${run.join(" ")}" fill="none" stroke="${s.color}" stroke-width="2.5"${s.dashed === true ? ' stroke-dasharray="6 4"' : ""}/>`,
      );
    }
    for (const p of points) {
      if (p === null) continue;
      const [cx, cy] = p.split(",");
      out.push(`<circle cx="${cx}" cy="${cy}" r="3.5" fill="${s.color}"/>`);
    }
  }
  // Legend.
  chart.series.forEach((s, i) => {
    const ly = top + 10 + i * 22;
    const lx = left + plotW + 16;
    out.push(
      `<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${s.color}" stroke-width="2.5"${s.dashed === true ? ' stroke-dasharray="6 4"' : ""}/>`,
    );
    out.push(`<text x="${lx + 30}" y="${ly + 4}">${escape(s.name)}</text>`);
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
