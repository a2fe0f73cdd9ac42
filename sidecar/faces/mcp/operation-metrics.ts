/**
 * The metric `mcp.server.operation.duration` of OpenTelemetry's MCP semantic conventions
 * (version SEMCONV_VERSION in tracing.ts; stability Development) for the requests the MCP face
 * answers, in both eras: one observation per JSON-RPC request, from its arrival to its answer
 * (an approval wait included), labelled with `mcp.method.name`, `mcp.protocol.version`,
 * `gen_ai.tool.name` (tools/call only) and `error.type`: the JSON-RPC error code of an error
 * answer, `tool_error` for a CallToolResult with isError (as the conventions say), empty for a
 * success. Notifications are not measured.
 */
import type { Metrics } from "../../metrics.js";

/** What one MCP request was. */
export interface McpOperation {
  method: string;
  /** The revision the request was made in (the `MCP-Protocol-Version` header or `_meta`). */
  protocolVersion: string | undefined;
  /** The tool of a tools/call. */
  tool?: string | undefined;
}

/** How an MCP request was answered: its JSON-RPC result or error. */
export type McpAnswer = { result: unknown } | { error: { code: number } };

/** error.type of an answer, or "" when it succeeded. */
export function errorTypeOf(answer: McpAnswer): string {
  if ("error" in answer) return String(answer.error.code);
  const r = answer.result as { isError?: unknown } | null;
  return r?.isError === true ? "tool_error" : "";
}

/** Records `mcp_server_operation_duration_seconds` (module comment); no-op without metrics. */
export class OperationMetrics {
  readonly #metrics: Metrics | undefined;

  constructor(metrics: Metrics | undefined) {
    this.#metrics = metrics;
  }

  /** Starts timing `op`; the returned function records it with the answer. */
  start(op: McpOperation): (answer: McpAnswer) => void {
    const started = process.hrtime.bigint();
    return (answer) => {
      this.#metrics?.mcpOperationDuration.observe(
        {
          mcp_method_name: op.method,
          mcp_protocol_version: op.protocolVersion ?? "",
          gen_ai_tool_name: op.method === "tools/call" ? (op.tool ?? "") : "",
          error_type: errorTypeOf(answer),
        },
        Number(process.hrtime.bigint() - started) / 1e9,
      );
    };
  }

  /**
   * Runs a request handler of the legacy SDK Server, timed: its value is the result, a thrown
   * McpError (or any error: -32603) the error answer.
   */
  async around<T>(op: McpOperation, fn: () => Promise<T>): Promise<T> {
    const done = this.start(op);
    try {
      const result = await fn();
      done({ result });
      return result;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      done({ error: { code: typeof code === "number" ? code : -32603 } });
      throw err;
    }
  }
}
