/**
 * The sidecar's spans (README "Operations → Tracing"), over src/telemetry:
 * - a SERVER span per gRPC call (`tollgate.v1.ToolGateway/Invoke`, ...), a child of the agent's
 *   W3C `traceparent` in the call's metadata; the span's own `traceparent` goes back to the
 *   agent in the response's initial metadata, so an agent that sent none still learns the trace;
 * - a SERVER span per MCP `tools/call` (`tools/call <tool>`), a child of `params._meta.traceparent`;
 * - `tollgate.forward`, the CLIENT span of the call to the upstream, whose context travels in the
 *   HTTP upstream's headers and in the MCP upstream's `params._meta`.
 * The SDK adds the request spans to the service and `tollgate.approval.wait` below them. While
 * tracing is off every helper here runs its body and nothing else.
 */
import * as grpc from "@grpc/grpc-js";
import {
  Attr,
  extractContext,
  injectContext,
  markError,
  type Span,
  SpanKind,
  setAttributes,
  type TextMapGetter,
  trace,
  tracer,
  tracingActive,
  withSpan,
} from "../src/telemetry/tracing.js";
import { GatewayError } from "./errors.js";
import { SERVICE_NAME } from "./proto.js";
import type { InvokeInput } from "./validate.js";

/** Tracer of the sidecar's own spans. */
export const sidecarTracer = tracer("tollgate-sidecar");

/** Reads W3C trace headers from gRPC metadata (string values only; `-bin` keys are never trace headers). */
const metadataGetter: TextMapGetter<grpc.Metadata> = {
  get(carrier, key) {
    const values = carrier.get(key).filter((v): v is string => typeof v === "string");
    return values.length === 0 ? undefined : values.length === 1 ? values[0] : values;
  },
  keys: (carrier) => Object.keys(carrier.getMap()),
};

/** Reads W3C trace keys from an MCP request's `params._meta`. */
const metaGetter: TextMapGetter<Record<string, unknown>> = {
  get(carrier, key) {
    const v = carrier[key];
    return typeof v === "string" ? v : undefined;
  },
  keys: (carrier) => Object.keys(carrier),
};

/** gRPC status codes that mark a server span as failed (OpenTelemetry's RPC conventions). */
const SERVER_FAULTS: ReadonlySet<number> = new Set([
  grpc.status.UNKNOWN,
  grpc.status.DEADLINE_EXCEEDED,
  grpc.status.UNIMPLEMENTED,
  grpc.status.INTERNAL,
  grpc.status.UNAVAILABLE,
  grpc.status.DATA_LOSS,
]);

/**
 * Runs a gRPC handler body in the SERVER span of `method`: the parent is the caller's
 * `traceparent` in `call.metadata`; the span's context is sent back as initial metadata.
 */
export function grpcServerSpan<T>(
  call: { metadata: grpc.Metadata; sendMetadata(md: grpc.Metadata): void },
  method: string,
  fn: () => Promise<T>,
): Promise<T> {
  if (!tracingActive()) return fn();
  return withSpan(
    sidecarTracer,
    `${SERVICE_NAME}/${method}`,
    {
      kind: SpanKind.SERVER,
      parent: extractContext(call.metadata, metadataGetter),
      attributes: { "rpc.system": "grpc", "rpc.service": SERVICE_NAME, "rpc.method": method },
      failed: (err) => SERVER_FAULTS.has(err instanceof GatewayError ? err.grpcCode : grpc.status.UNKNOWN),
      errorType: (err) => (err instanceof GatewayError ? err.code : "INTERNAL"),
    },
    async (span) => {
      const carrier: Record<string, string> = {};
      injectContext(carrier);
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(carrier)) md.set(k, v);
      call.sendMetadata(md);
      try {
        const result = await fn();
        span.setAttribute("rpc.grpc.status_code", grpc.status.OK);
        return result;
      } catch (err) {
        span.setAttribute(
          "rpc.grpc.status_code",
          err instanceof GatewayError ? err.grpcCode : grpc.status.UNKNOWN,
        );
        throw err;
      }
    },
  );
}

/** Runs an MCP tools/call in its SERVER span, a child of `params._meta.traceparent`. */
export function mcpServerSpan<T>(tool: string, meta: unknown, fn: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return fn();
  const carrier = typeof meta === "object" && meta !== null ? (meta as Record<string, unknown>) : {};
  return withSpan(
    sidecarTracer,
    `tools/call ${tool}`,
    {
      kind: SpanKind.SERVER,
      parent: extractContext(carrier, metaGetter),
      attributes: {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
      },
    },
    fn,
  );
}

/** Names the governed call on the active span (after validation: names, ids, never the payload). */
export function annotateInvoke(input: InvokeInput): void {
  if (!tracingActive()) return;
  const span = trace.getActiveSpan();
  if (!span) return;
  setAttributes(span, () => ({
    [Attr.chainId]: input.chainId,
    [Attr.agentName]: input.agentName,
    [Attr.actionType]: input.actionType,
    [Attr.actionName]: input.actionName,
    ...(input.upstream !== null && { [Attr.upstream]: input.upstream }),
  }));
}

/** Runs the forward to an upstream in the `tollgate.forward` CLIENT span. */
export function forwardSpan<T>(
  upstream: { name: string; type: string },
  actionName: string,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return withSpan(
    sidecarTracer,
    "tollgate.forward",
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [Attr.upstream]: upstream.name,
        [Attr.upstreamType]: upstream.type,
        [Attr.actionName]: actionName,
      },
      errorType: (err) => (err instanceof Error && "errorClass" in err ? String(err.errorClass) : "Error"),
    },
    fn,
  );
}

/** Marks a tool's error answer (HTTP ≥ 400, MCP isError) on the forward span. */
export function markToolError(span: Span, errorClass: string | null): void {
  if (tracingActive()) markError(span, null, true, () => errorClass ?? "tool_error");
}
