/**
 * Prometheus metrics of the operator (prom-client), one registry per operator instance so that
 * several instances can run in one test process. Label values are bounded (kind, result,
 * outcome), never object names or secrets.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { collectConformingDefaultMetrics, registerBuildInfo } from "../src/metrics/default-metrics.js";

/** Results of one reconcile, the `result` label of tollgate_operator_reconciles_total. */
export const ReconcileResult = { success: "success", error: "error", requeue: "requeue" } as const;
export type ReconcileResult = (typeof ReconcileResult)[keyof typeof ReconcileResult];

/** Outcomes of one admission review, the `outcome` label of tollgate_operator_webhook_admissions_total. */
export const AdmissionOutcome = {
  injected: "injected",
  skipped: "skipped",
  denied: "denied",
  error: "error",
} as const;
export type AdmissionOutcome = (typeof AdmissionOutcome)[keyof typeof AdmissionOutcome];

/** Creates the operator's metrics. */
export function createOperatorMetrics(opts: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (opts.defaultMetrics ?? true) collectConformingDefaultMetrics(registry);
  registerBuildInfo(registry, "operator");
  return {
    registry,
    reconciles: new Counter({
      name: "tollgate_operator_reconciles_total",
      help: "Reconciles by kind and result (success, error, requeue).",
      labelNames: ["kind", "result"] as const,
      registers: [registry],
    }),
    reconcileDuration: new Histogram({
      name: "tollgate_operator_reconcile_duration_seconds",
      help: "Duration of one reconcile in seconds, by kind.",
      labelNames: ["kind"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: "tollgate_operator_queue_depth",
      help: "Keys waiting in the work queue.",
      registers: [registry],
    }),
    leader: new Gauge({
      name: "tollgate_operator_leader",
      help: "1 while this replica holds the leader Lease and reconciles, else 0.",
      registers: [registry],
    }),
    admissions: new Counter({
      name: "tollgate_operator_webhook_admissions_total",
      help: "Admission reviews answered by the sidecar injector, by outcome (injected, skipped, denied, error).",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
    admissionDuration: new Histogram({
      name: "tollgate_operator_webhook_admission_duration_seconds",
      help: "Time to answer one admission review in seconds (request parsed to response sent).",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25],
      registers: [registry],
    }),
  };
}
export type OperatorMetrics = ReturnType<typeof createOperatorMetrics>;
