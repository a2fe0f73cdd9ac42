/**
 * Human-readable formatting shared by dashboard pages and approval mails. Pure functions; the
 * caller passes "now" (the service clock), never the wall clock.
 */

/** `2026-01-15 12:00 UTC` from an ISO timestamp or epoch ms. */
export function formatTime(t: string | number | Date): string {
  const d = new Date(t);
  return `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** A duration in ms as `2 d 3 h`, `5 h 12 min`, `4 min` or `less than a minute`. */
export function formatDuration(ms: number): string {
  if (ms < 60_000) return "less than a minute";
  const min = Math.floor(ms / 60_000);
  const d = Math.floor(min / 1440);
  const h = Math.floor((min % 1440) / 60);
  const m = min % 60;
  if (d > 0) return h ? `${d} d ${h} h` : `${d} d`;
  if (h > 0) return m ? `${h} h ${m} min` : `${h} h`;
  return `${m} min`;
}

/** Time left until `expires` as text, or `expired`. */
export function timeLeft(expires: string | number | Date, nowMs: number): string {
  const left = new Date(expires).getTime() - nowMs;
  return left <= 0 ? "expired" : formatDuration(left);
}

/** `$1,234.50` (USD). */
export const formatUsd = (n: number): string =>
  n.toLocaleString("en-US", {
    style: "currency",
    currency: "USD",
    minimumFractionDigits: 2,
    maximumFractionDigits: 6,
  });

/** The cumulative chain metrics (receipt `cumulative_metrics`) as label/value rows. */
export interface CumulativeMetricsView {
  financial_exposure_usd: number;
  external_communications_count: number;
  records_modified_count: number;
  external_domains_contacted: string[];
  estimated_cost_usd: number;
}

/** Label/value rows of cumulative metrics, in a fixed order. */
export function metricRows(m: CumulativeMetricsView): [string, string][] {
  return [
    ["Financial exposure", formatUsd(m.financial_exposure_usd)],
    ["External communications", String(m.external_communications_count)],
    ["Records modified", String(m.records_modified_count)],
    [
      "External domains contacted",
      m.external_domains_contacted.length ? m.external_domains_contacted.join(", ") : "none",
    ],
    ["Estimated LLM cost", formatUsd(m.estimated_cost_usd)],
  ];
}

/** Labels of the exception durations (spec: 1 hour, 1 day, 1 week, 1 month). */
export const durationLabels = { "1h": "1 hour", "1d": "1 day", "1w": "1 week", "1m": "1 month" } as const;

/** Human label of a policy outcome. */
export const decisionLabels: Record<string, string> = {
  allow: "Allowed",
  allow_with_flag: "Allowed (flagged)",
  require_approval: "Approval required",
  deny: "Denied",
};
