/** Small statistics and formatting helpers for the benchmarks. */

/** The q-quantile (0..1) of `sorted` (ascending), nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(values: readonly number[]): number {
  return quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

export interface Latency {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
}

/** Summarises latency samples given in nanoseconds; the summary is in microseconds. */
export function summarise(samplesNs: readonly bigint[]): Latency {
  const us = samplesNs.map((ns) => Number(ns) / 1000).sort((a, b) => a - b);
  const mean = us.reduce((s, x) => s + x, 0) / us.length;
  return { n: us.length, p50: quantile(us, 0.5), p99: quantile(us, 0.99), mean };
}

export function ms(ns: bigint): number {
  return Number(ns) / 1e6;
}

/** A number with a sensible number of digits. */
export function fmt(x: number, digits = 3): string {
  if (!Number.isFinite(x)) return String(x);
  const abs = Math.abs(x);
  if (abs >= 1000) return Math.round(x).toLocaleString("en-US");
  return x.toPrecision(digits);
}

/** Renders rows as a plain-text (also Markdown) table. */
export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [line(head), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}
