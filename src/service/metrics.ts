/**
 * Prometheus metrics of the service (prom-client, Prometheus naming conventions). One registry
 * per service instance so that several instances can live in one test process.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { collectConformingDefaultMetrics, registerBuildInfo } from "../metrics/default-metrics.js";
import { type Clock, systemClock } from "./clock.js";
import type { Database } from "./db/pool.js";

/**
 * The service's metrics. Label values are bounded enums, never identifiers or secrets.
 * `clock` (default: the wall clock) is "now" for the age gauges, read at scrape time from the
 * database; the alert rules (charts/tollgate/files/alerts.yaml) are built on them.
 * `approvalWaiters` (the service's held approval-status requests) is read at scrape time for
 * `tollgate_approval_status_waiting`; without it that gauge is not registered.
 */
export function createMetrics(
  db: Database,
  opts: { defaultMetrics?: boolean; clock?: Clock; approvalWaiters?: { readonly waiting: number } } = {},
) {
  const clock = opts.clock ?? systemClock;
  const registry = new Registry();
  if (opts.defaultMetrics ?? true) collectConformingDefaultMetrics(registry);
  registerBuildInfo(registry, "service");
  const m = {
    registry,
    /**
     * RED metrics of the HTTP API, OpenTelemetry HTTP semantic-convention names
     * (`http.server.request.duration`, `http.request.method`, `http.route`) in Prometheus form;
     * the status as its class (2xx..5xx) keeps the series bounded. Route = the template
     * (`/v1/chains/:chain_id`), "unmatched" for 404s of unknown paths.
     */
    httpDuration: new Histogram({
      name: "http_server_request_duration_seconds",
      help: "Duration of HTTP server requests, in seconds, by method, route template and status class.",
      labelNames: ["http_request_method", "http_route", "http_response_status_class"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
      registers: [registry],
    }),
    decisions: new Counter({
      name: "tollgate_decisions_total",
      help: "Policy decisions made by the service, by outcome.",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
    recordDuration: new Histogram({
      name: "tollgate_record_action_duration_seconds",
      help: "Time to evaluate and record one action, in seconds.",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [registry],
    }),
    approvalWait: new Histogram({
      name: "tollgate_approval_wait_seconds",
      help: "Time from an approval request to its resolution, in seconds, by final status.",
      labelNames: ["status"] as const,
      buckets: [1, 5, 30, 60, 300, 900, 3600, 14400, 86400],
      registers: [registry],
    }),
    /** How held approval-status requests (`?wait=`) ended: waiters.ts HoldEnd. */
    approvalHolds: new Counter({
      name: "tollgate_approval_status_holds_total",
      help: "Held approval-status requests (wait) by how they ended: first_read, woken, elapsed or shutdown.",
      labelNames: ["ended"] as const,
      registers: [registry],
    }),
    receiptsIssued: new Counter({
      name: "tollgate_receipts_issued_total",
      help: "Receipts issued on chain completion, by chain status.",
      labelNames: ["status"] as const,
      registers: [registry],
    }),
    verifications: new Counter({
      name: "tollgate_verification_results_total",
      help: "Verification requests by surface, artifact type and overall status.",
      labelNames: ["surface", "artifact_type", "status"] as const,
      registers: [registry],
    }),
    notifications: new Counter({
      name: "tollgate_notifications_total",
      help: "Outbox notification delivery attempts, by result (sent, failed and retried, dropped).",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
    receiptFailures: new Counter({
      name: "tollgate_receipt_failures_total",
      help: "Chain completions that failed with a server error: the receipt was not built, signed or stored.",
      registers: [registry],
    }),
    legacyRoutes: new Counter({
      name: "tollgate_legacy_route_requests_total",
      help: "Requests to legacy compatibility routes, by route (telemetry required before removal).",
      labelNames: ["route"] as const,
      registers: [registry],
    }),
  };
  const waiters = opts.approvalWaiters;
  if (waiters) {
    new Gauge({
      name: "tollgate_approval_status_waiting",
      help: "Approval-status requests (wait) held right now, waiting for a resolution.",
      registers: [registry],
      collect() {
        this.set(waiters.waiting);
      },
    });
  }
  new Gauge({
    name: "tollgate_approvals_pending",
    help: "Approvals waiting for a human decision.",
    registers: [registry],
    async collect() {
      const { rows } = await db.query("SELECT count(*)::int AS n FROM approvals WHERE status = 'pending'");
      this.set(rows[0]?.n ?? 0);
    },
  });
  new Gauge({
    name: "tollgate_outbox_backlog",
    help: "Notifications in the outbox not yet delivered.",
    registers: [registry],
    async collect() {
      const { rows } = await db.query(
        "SELECT count(*)::int AS n FROM outbox WHERE sent_at IS NULL AND dropped_at IS NULL",
      );
      this.set(rows[0]?.n ?? 0);
    },
  });
  /** Seconds from `t` (a timestamptz, or null when there is none) to now; 0 without one. */
  const ageSeconds = (t: Date | string | null | undefined) =>
    t ? Math.max(0, (clock.nowMs() - new Date(t).getTime()) / 1000) : 0;
  new Gauge({
    name: "tollgate_approvals_oldest_pending_age_seconds",
    help: "Age of the oldest approval waiting for a human decision, in seconds (0 when none waits).",
    registers: [registry],
    async collect() {
      const { rows } = await db.query(
        "SELECT min(requested_at) AS t FROM approvals WHERE status = 'pending'",
      );
      this.set(ageSeconds(rows[0]?.t));
    },
  });
  new Gauge({
    name: "tollgate_outbox_oldest_pending_age_seconds",
    help: "Age of the oldest notification in the outbox not yet delivered nor dropped, in seconds (0 when none).",
    registers: [registry],
    async collect() {
      const { rows } = await db.query(
        "SELECT min(created_at) AS t FROM outbox WHERE sent_at IS NULL AND dropped_at IS NULL",
      );
      this.set(ageSeconds(rows[0]?.t));
    },
  });
  new Gauge({
    name: "tollgate_jobs_overdue_seconds",
    help: "How long the most overdue durable job (approval timeout, escalation) has been due and not run, in seconds (0 when none is due).",
    registers: [registry],
    async collect() {
      const { rows } = await db.query(
        "SELECT min(run_at) AS t FROM jobs WHERE done_at IS NULL AND run_at <= $1",
        [new Date(clock.nowMs())],
      );
      this.set(ageSeconds(rows[0]?.t));
    },
  });
  new Gauge({
    name: "tollgate_jobs_failing",
    help: "Durable jobs not done whose last attempt failed (they are retried with backoff).",
    registers: [registry],
    async collect() {
      const { rows } = await db.query(
        "SELECT count(*)::int AS n FROM jobs WHERE done_at IS NULL AND last_error IS NOT NULL",
      );
      this.set(rows[0]?.n ?? 0);
    },
  });
  return m;
}

export type Metrics = ReturnType<typeof createMetrics>;
