/**
 * prom-client's default process and Node.js metrics, minus the three series that break the
 * Prometheus naming conventions: `nodejs_active_handles_total`, `nodejs_active_requests_total`
 * and `nodejs_active_resources_total` are gauges with a `_total` suffix (reserved for counters),
 * which `promtool check metrics` rejects. Nothing is lost: the per-type gauges
 * `nodejs_active_handles{type}`, `nodejs_active_requests{type}` and
 * `nodejs_active_resources{type}` stay, and `sum()` over them is the total.
 * Shared by the service, the sidecar and the operator, all with the standard unprefixed names
 * (`process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`), so standard dashboards see every
 * component; the scrape's `job`/`pod` labels tell them apart.
 */
import { collectDefaultMetrics, Gauge, type Registry } from "prom-client";
import { COMMIT, VERSION } from "../version.js";

/** Default metrics whose names promtool's lint rejects (gauges ending in `_total`). */
export const NON_CONFORMING_DEFAULT_METRICS = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
] as const;

/**
 * Registers the default process and Node.js metrics on `registry` under their standard names,
 * then removes {@link NON_CONFORMING_DEFAULT_METRICS}.
 */
export function collectConformingDefaultMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of NON_CONFORMING_DEFAULT_METRICS) registry.removeSingleMetric(name);
}

/** The components that expose metrics. */
export type Component = "service" | "sidecar" | "operator";

/**
 * Registers `tollgate_<component>_build_info{version, commit, nodejs_version} 1`, the
 * Prometheus convention for what is running (join on it to label other series by version).
 */
export function registerBuildInfo(registry: Registry, component: Component): void {
  new Gauge({
    name: `tollgate_${component}_build_info`,
    help: `Build of the Tollgate ${component}: version, commit and Node.js version; always 1.`,
    labelNames: ["version", "commit", "nodejs_version"] as const,
    registers: [registry],
  }).set({ version: VERSION, commit: COMMIT, nodejs_version: process.version }, 1);
}
