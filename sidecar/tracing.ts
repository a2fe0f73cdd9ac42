/**
 * The sidecar's spans (README "Operations → Tracing"), over src/telemetry:
 * - a SERVER span per gRPC call (`tollgate.v1.ToolGateway/Invoke`, ...), a child of the agent's
 *   W3C `traceparent` in the call's metadata; the span's own `traceparent` goes back to the
 *   agent in the response's initial metadata, so an agent that sent none still learns the trace;
 * - a SERVER span per MCP `tools/call` (`tools/call <tool>`), a child of `params._meta.traceparent`;
 * - below either, `execute_tool <tool>` (GenAI conventions, SEMCONV_VERSION): the governed execution;
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
import { GatewayError } from "./wire/errors.js";
import { SERVICE_NAME } from "./wire/proto.js";
import type { InvokeInput } from "./wire/validate.js";

/**
 * The OpenTelemetry semantic conventions the sidecar's GenAI and MCP spans follow: v1.39.0 (the
 * MCP conventions there, gen-ai/mcp.md, and the GenAI `execute_tool` span, gen-ai/gen-ai-spans.md;
 * both at stability "Development", so names may change in later releases, which now live in
 * open-telemetry/semantic-conventions-genai). Tollgate's own decision attributes are `tollgate.*`
 * (Attr). Pinned here and in docs/operations/tracing.md.
 */
export const SEMCONV_VERSION = "1.39.0";

/** The attribute names of those conventions that the sidecar sets. */
export const SemConv = {
  genAiOperationName: "gen_ai.operation.name",
  genAiToolName: "gen_ai.tool.name",
  genAiToolType: "gen_ai.tool.type",
  genAiToolCallId: "gen_ai.tool.call.id",
  mcpMethodName: "mcp.method.name",
  mcpSessionId: "mcp.session.id",
  mcpProtocolVersion: "mcp.protocol.version",
  jsonrpcRequestId: "jsonrpc.request.id",
} as const;

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

/** What the MCP conventions record about one request (all optional: absent ones are not set). */
export interface McpRequestInfo {
  /** `Mcp-Session-Id` of the Streamable HTTP session. */
  sessionId?: string | undefined;
  /** The negotiated revision, e.g. "2025-11-25" (the `MCP-Protocol-Version` header). */
  protocolVersion?: string | undefined;
  /** The JSON-RPC request id. */
  requestId?: string | number | undefined;
}

/**
 * Runs an MCP tools/call in its SERVER span, a child of `params._meta.traceparent`. Named and
 * attributed as OpenTelemetry's MCP conventions say (SEMCONV_VERSION): `tools/call {tool}`,
 * `mcp.method.name`, `mcp.session.id`, `mcp.protocol.version`, `jsonrpc.request.id`,
 * `gen_ai.operation.name` = execute_tool, `gen_ai.tool.name`.
 */
export function mcpServerSpan<T>(
  tool: string,
  meta: unknown,
  info: McpRequestInfo,
  fn: () => Promise<T>,
): Promise<T> {
  if (!tracingActive()) return fn();
  const carrier = typeof meta === "object" && meta !== null ? (meta as Record<string, unknown>) : {};
  return withSpan(
    sidecarTracer,
    `tools/call ${tool}`,
    {
      kind: SpanKind.SERVER,
      parent: extractContext(carrier, metaGetter),
      attributes: {
        [SemConv.mcpMethodName]: "tools/call",
        [SemConv.genAiOperationName]: "execute_tool",
        [SemConv.genAiToolName]: tool,
        ...(info.sessionId && { [SemConv.mcpSessionId]: info.sessionId }),
        ...(info.protocolVersion && { [SemConv.mcpProtocolVersion]: info.protocolVersion }),
        ...(info.requestId !== undefined && { [SemConv.jsonrpcRequestId]: String(info.requestId) }),
      },
    },
    fn,
  );
}

/**
 * Runs the governed execution of one tool call (decision, approval wait, forward) in the GenAI
 * conventions' `execute_tool {gen_ai.tool.name}` INTERNAL span, a child of the gRPC or MCP
 * SERVER span: `gen_ai.operation.name` = execute_tool, `gen_ai.tool.name`, `gen_ai.tool.type` =
 * function, and `gen_ai.tool.call.id` when the call has one (the MCP JSON-RPC request id, the
 * gRPC idempotency key).
 */
export function executeToolSpan<T>(tool: string, callId: string | null, fn: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return fn();
  return withSpan(
    sidecarTracer,
    `execute_tool ${tool}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        [SemConv.genAiOperationName]: "execute_tool",
        [SemConv.genAiToolName]: tool,
        [SemConv.genAiToolType]: "function",
        ...(callId !== null && { [SemConv.genAiToolCallId]: callId }),
      },
      errorType: (err) => (err instanceof GatewayError ? err.code : "INTERNAL"),
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
