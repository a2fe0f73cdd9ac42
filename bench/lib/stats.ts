/**
 * Shared benchmark statistics: HdrHistogram latency recording (microsecond resolution), medians
 * and spreads over repeated runs, and the result rows every benchmark prints.
 */
import * as hdr from "hdr-histogram-js";

/** A latency recorder in microseconds (1 µs .. 60 s, 3 significant digits). */
export function latencyHistogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 60_000_000,
    numberOfSignificantValueDigits: 3,
  });
}

/** p50/p99 in milliseconds of a histogram recorded in microseconds. */
export function percentilesMs(h: hdr.Histogram): { p50: number; p99: number; max: number; count: number } {
  return {
    p50: h.getValueAtPercentile(50) / 1000,
    p99: h.getValueAtPercentile(99) / 1000,
    max: h.maxValue / 1000,
    count: h.totalCount,
  };
}

/** Median of numbers (the machines are noisy: benchmarks repeat and report the median). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Spread of repeated figures as (max − min) / median, in percent. */
export function spreadPct(xs: number[]): number {
  const m = median(xs);
  return m === 0 ? 0 : ((Math.max(...xs) - Math.min(...xs)) / m) * 100;
}

/** One line of a benchmark's result table. */
export interface ResultRow {
  benchmark: string;
  figure: string;
  value: number;
  unit: string;
  baseline: string;
  baselineValue: number | null;
  /** value / baselineValue (or the inverse for lower-is-better figures, see `better`). */
  ratio: number | null;
  better: "higher" | "lower";
  target: string;
  met: boolean | null;
  spreadPct: number | null;
  repeats: number;
}

/** A row that reports a figure (the median of `values`) without a baseline or target. */
export function infoRow(benchmark: string, figure: string, unit: string, values: number[]): ResultRow {
  return {
    benchmark,
    figure,
    value: median(values),
    unit,
    baseline: "—",
    baselineValue: null,
    ratio: null,
    better: "lower",
    target: "—",
    met: null,
    spreadPct: spreadPct(values),
    repeats: values.length,
  };
}

const fmt = (n: number | null, digits = 2) =>
  n === null ? "—" : Number.isInteger(n) ? String(n) : n.toFixed(digits);

/** Markdown table of result rows. */
export function markdownTable(rows: ResultRow[]): string {
  const head =
    "| benchmark | figure | value | baseline (same run) | ratio | target | met | spread |\n| --- | --- | --- | --- | --- | --- | --- | --- |";
  const body = rows.map(
    (r) =>
      `| ${r.benchmark} | ${r.figure} | ${fmt(r.value)} ${r.unit} | ${r.baseline}${r.baselineValue === null ? "" : `: ${fmt(r.baselineValue)} ${r.unit}`} | ${fmt(r.ratio)} | ${r.target} | ${r.met === null ? "—" : r.met ? "yes" : "no"} | ${r.spreadPct === null ? "—" : `${fmt(r.spreadPct, 1)}%`} (n=${r.repeats}) |`,
  );
  return [head, ...body].join("\n");
}
