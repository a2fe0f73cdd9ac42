// Original file: proto/tollgate/v1/gateway.proto

import type { Decision as _tollgate_v1_Decision, Decision__Output as _tollgate_v1_Decision__Output } from '../../tollgate/v1/Decision.js';

export interface InvokeResponse {
  'decision'?: (_tollgate_v1_Decision | null);
  /**
   * False when no upstream was named (record and decide only).
   */
  'forwarded'?: (boolean);
  /**
   * The upstream's result as JSON text (http: the response body, or a JSON string when it was
   * not JSON; mcp: the CallToolResult). result_sha256 in the receipt is the SHA-256 of exactly
   * these UTF-8 bytes.
   */
  'result_json'?: (string);
  /**
   * The tool answered with an error: HTTP status >= 400, or an MCP result with isError.
   */
  'upstream_error'?: (boolean);
  /**
   * HTTP status of an http upstream; 0 for mcp.
   */
  'upstream_status'?: (number);
  /**
   * Wall time of the upstream call in milliseconds.
   */
  'upstream_duration_ms'?: (number | string);
}

export interface InvokeResponse__Output {
  'decision': (_tollgate_v1_Decision__Output | null);
  /**
   * False when no upstream was named (record and decide only).
   */
  'forwarded': (boolean);
  /**
   * The upstream's result as JSON text (http: the response body, or a JSON string when it was
   * not JSON; mcp: the CallToolResult). result_sha256 in the receipt is the SHA-256 of exactly
   * these UTF-8 bytes.
   */
  'result_json': (string);
  /**
   * The tool answered with an error: HTTP status >= 400, or an MCP result with isError.
   */
  'upstream_error': (boolean);
  /**
   * HTTP status of an http upstream; 0 for mcp.
   */
  'upstream_status': (number);
  /**
   * Wall time of the upstream call in milliseconds.
   */
  'upstream_duration_ms': (number);
}
