/**
 * Prometheus metrics of the sidecar (prom-client). One registry per sidecar instance. Label
 * values are bounded: decisions and error kinds are fixed sets, upstream names come from the
 * operator's configuration; never identifiers, payloads or secrets.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { collectConformingDefaultMetrics, registerBuildInfo } from "../src/metrics/default-metrics.js";

/** What an Invoke ended with (label `decision` of tollgate_sidecar_invocations_total). */
export const InvocationResult = {
  allow: "allow",
  allow_with_flag: "allow_with_flag",
  deny: "deny",
  kill_switch: "kill_switch",
  auto_paused: "auto_paused",
  approval_pending: "approval_pending",
  backend_unavailable: "backend_unavailable",
  deadline_exceeded: "deadline_exceeded",
  cancelled: "cancelled",
  invalid_argument: "invalid_argument",
  not_found: "not_found",
  shutting_down: "shutting_down",
  error: "error",
} as const;
export type InvocationResult = (typeof InvocationResult)[keyof typeof InvocationResult];

const fast = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Where the gauges read their values at scrape time (set by the Governor and the MCP face). */
export interface GaugeSources {
  /** Chains opened through this sidecar and not yet completed. */
  openChains: () => number;
  /** Open MCP sessions. */
  mcpSessions: () => number;
  /** Calls waiting for a human approval now. */
  approvalWaits: () => number;
}

/** Creates the sidecar's registry and metrics. */
export function createMetrics(opts: { defaultMetrics?: boolean } = {}) {
  const registry = new Registry();
  if (opts.defaultMetrics ?? true) collectConformingDefaultMetrics(registry);
  registerBuildInfo(registry, "sidecar");
  const sources: GaugeSources = { openChains: () => 0, mcpSessions: () => 0, approvalWaits: () => 0 };
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  return {
    registry,
    sources,
    openChains: gauge(
      "tollgate_sidecar_open_chains",
      "Chains opened through this sidecar (gRPC OpenChain and MCP sessions) and not yet completed.",
      () => sources.openChains(),
    ),
    mcpSessions: gauge("tollgate_sidecar_mcp_sessions", "Open MCP sessions of the MCP face.", () =>
      sources.mcpSessions(),
    ),
    approvalWaits: gauge(
      "tollgate_sidecar_approval_waits",
      "Calls waiting for a human approval now (attached or not).",
      () => sources.approvalWaits(),
    ),
    invocations: new Counter({
      name: "tollgate_sidecar_invocations_total",
      help: "Invocations (gRPC Invoke and MCP tools/call) by how they ended.",
      labelNames: ["decision", "surface"] as const,
      registers: [registry],
    }),
    decisionDuration: new Histogram({
      name: "tollgate_sidecar_decision_duration_seconds",
      help: "Time to get the service's decision for one invocation (without approval waits), in seconds.",
      buckets: fast,
      registers: [registry],
    }),
    upstreamDuration: new Histogram({
      name: "tollgate_sidecar_upstream_duration_seconds",
      help: "Time of one forwarded upstream call, in seconds, by upstream and result (ok, tool_error, failed).",
      labelNames: ["upstream", "result"] as const,
      buckets: fast,
      registers: [registry],
    }),
    approvalWait: new Histogram({
      name: "tollgate_sidecar_approval_wait_seconds",
      help: "Time an invocation waited on a human approval, in seconds, by result (approved, denied, abandoned).",
      labelNames: ["result"] as const,
      buckets: [1, 5, 15, 30, 60, 300, 900, 3600, 14400, 86400],
      registers: [registry],
    }),
    failModes: new Counter({
      name: "tollgate_sidecar_fail_mode_total",
      help: "Actions the service could not evaluate (unreachable) decided by the configured fail mode instead, by mode (allow: forwarded unrecorded; deny: refused).",
      labelNames: ["mode"] as const,
      registers: [registry],
    }),
    mcpOperationDuration: new Histogram({
      // OpenTelemetry MCP semantic conventions (SEMCONV_VERSION in tracing.ts): the metric
      // mcp.server.operation.duration and its attributes, in Prometheus spelling.
      name: "mcp_server_operation_duration_seconds",
      help: "Duration of one MCP request answered by the MCP face (both eras; approval waits included), in seconds, by mcp.method.name, mcp.protocol.version, gen_ai.tool.name (tools/call) and error.type (a JSON-RPC error code, tool_error for a tool error result; empty when it succeeded).",
      labelNames: ["mcp_method_name", "mcp_protocol_version", "gen_ai_tool_name", "error_type"] as const,
      // The buckets the conventions advise for this metric.
      buckets: [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    }),
    errors: new Counter({
      name: "tollgate_sidecar_errors_total",
      help: "Errors by kind: backend (service unreachable), upstream, outcome_report, internal.",
      labelNames: ["kind"] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
