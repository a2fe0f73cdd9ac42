/**
 * prom-client's default process and Node.js metrics, minus the three series that break the
 * Prometheus naming conventions: `nodejs_active_handles_total`, `nodejs_active_requests_total`
 * and `nodejs_active_resources_total` are gauges with a `_total` suffix (reserved for counters),
 * which `promtool check metrics` rejects. Nothing is lost: the per-type gauges
 * `nodejs_active_handles{type}`, `nodejs_active_requests{type}` and
 * `nodejs_active_resources{type}` stay, and `sum()` over them is the total.
 * Shared by the service, the sidecar and the operator (issue 8).
 */
import { collectDefaultMetrics, type Registry } from "prom-client";

/** Default metrics whose names promtool's lint rejects (gauges ending in `_total`). */
export const NON_CONFORMING_DEFAULT_METRICS = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
] as const;

/**
 * Registers the default metrics on `registry` with an optional name `prefix` (e.g.
 * "tollgate_sidecar_"), then removes {@link NON_CONFORMING_DEFAULT_METRICS}.
 */
export function collectConformingDefaultMetrics(registry: Registry, prefix = ""): void {
  collectDefaultMetrics({ register: registry, prefix });
  for (const name of NON_CONFORMING_DEFAULT_METRICS) registry.removeSingleMetric(`${prefix}${name}`);
}
