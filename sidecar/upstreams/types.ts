/**
 * What every upstream (a tool the sidecar forwards allowed calls to) offers, and how it fails.
 */
import type { JsonObject } from "../wire/struct.js";

/** Context the sidecar passes along with a forwarded call. */
export interface CallContext {
  chainId: string;
  /** null when nothing was recorded (service unreachable, fail mode allow). */
  eventId: string | null;
  agentName: string;
  /** Aborts the upstream call (the caller cancelled, its deadline passed, or drain ended). */
  signal?: AbortSignal;
}

/** The tool's answer. */
export interface UpstreamResult {
  /** The result as JSON text; the outcome's result_sha256 is the SHA-256 of these UTF-8 bytes. */
  resultJson: string;
  /** The tool answered with an error (HTTP status ≥ 400, MCP isError). */
  isError: boolean;
  /** HTTP status for http upstreams; 0 for mcp. */
  status: number;
  /** A short class of the tool error for the outcome, e.g. "HTTP 502" or "McpToolError"; null on success. */
  errorClass: string | null;
}

/** How forwarding failed without an answer from the tool. */
export const UpstreamFailure = {
  unavailable: "unavailable",
  timeout: "timeout",
  aborted: "aborted",
} as const;
export type UpstreamFailure = (typeof UpstreamFailure)[keyof typeof UpstreamFailure];

/** Forwarding failed: the tool could not be reached, timed out, or the call was aborted. */
export class UpstreamError extends Error {
  constructor(
    readonly upstream: string,
    readonly failure: UpstreamFailure,
    /** A short class for the outcome's error_class, e.g. "ECONNREFUSED" or "Timeout". */
    readonly errorClass: string,
    message: string,
  ) {
    super(message);
    this.name = "UpstreamError";
  }
}

/** A configured upstream. */
export interface Upstream {
  readonly name: string;
  readonly type: "http" | "mcp";
  /** Connects (mcp) or does nothing (http). Resolves when the upstream can take calls. */
  start(): Promise<void>;
  /** Whether calls can be forwarded now (readiness). */
  ready(): boolean;
  /**
   * Forwards one tool call; the payload goes unchanged.
   * @throws UpstreamError when no answer came back.
   */
  call(actionName: string, payload: JsonObject, ctx: CallContext): Promise<UpstreamResult>;
  close(): Promise<void>;
}
