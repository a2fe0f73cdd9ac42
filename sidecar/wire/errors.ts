/**
 * How an invocation fails, as a gRPC status (see proto/tollgate/v1/gateway.proto for the
 * contract): the SDK's errors and the sidecar's own map onto a GatewayError carrying the gRPC
 * code, a stable `tollgate-error-code`, a message and, when the service made one, the decision.
 */
import { status as GrpcStatus } from "@grpc/grpc-js";
import { ApiErrorCode } from "../../src/contract/v1/errors.js";
import {
  ActionDeniedError,
  BackendUnavailableError,
  ChainAutoPausedError,
  ChainTimeoutError,
  InvalidArgumentError,
  type PolicyDecision,
  PolicyViolationError,
  ServiceApiError,
  ServiceKillSwitchError,
} from "../../src/sdk/index.js";
import type { InvocationResult } from "../metrics.js";

/** The stable error codes of the `tollgate-error-code` metadata. */
export const ErrorCode = {
  ACTION_DENIED: "ACTION_DENIED",
  KILL_SWITCH: "KILL_SWITCH",
  AUTO_PAUSED: "AUTO_PAUSED",
  APPROVAL_PENDING: "APPROVAL_PENDING",
  CHAIN_COMPLETED: "CHAIN_COMPLETED",
  CHAIN_TIMEOUT: "CHAIN_TIMEOUT",
  DEADLINE_EXCEEDED: "DEADLINE_EXCEEDED",
  CANCELLED: "CANCELLED",
  BACKEND_UNAVAILABLE: "BACKEND_UNAVAILABLE",
  UPSTREAM_UNAVAILABLE: "UPSTREAM_UNAVAILABLE",
  UPSTREAM_TIMEOUT: "UPSTREAM_TIMEOUT",
  SHUTTING_DOWN: "SHUTTING_DOWN",
  INVALID_ARGUMENT: "INVALID_ARGUMENT",
  NOT_FOUND: "NOT_FOUND",
  INTERNAL: "INTERNAL",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const grpcCodeOf: Record<ErrorCode, GrpcStatus> = {
  ACTION_DENIED: GrpcStatus.PERMISSION_DENIED,
  KILL_SWITCH: GrpcStatus.FAILED_PRECONDITION,
  AUTO_PAUSED: GrpcStatus.FAILED_PRECONDITION,
  APPROVAL_PENDING: GrpcStatus.FAILED_PRECONDITION,
  CHAIN_COMPLETED: GrpcStatus.FAILED_PRECONDITION,
  CHAIN_TIMEOUT: GrpcStatus.DEADLINE_EXCEEDED,
  DEADLINE_EXCEEDED: GrpcStatus.DEADLINE_EXCEEDED,
  CANCELLED: GrpcStatus.CANCELLED,
  BACKEND_UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  UPSTREAM_UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  UPSTREAM_TIMEOUT: GrpcStatus.UNAVAILABLE,
  SHUTTING_DOWN: GrpcStatus.UNAVAILABLE,
  INVALID_ARGUMENT: GrpcStatus.INVALID_ARGUMENT,
  NOT_FOUND: GrpcStatus.NOT_FOUND,
  INTERNAL: GrpcStatus.INTERNAL,
};

const resultOf: Record<ErrorCode, InvocationResult> = {
  ACTION_DENIED: "deny",
  KILL_SWITCH: "kill_switch",
  AUTO_PAUSED: "auto_paused",
  APPROVAL_PENDING: "approval_pending",
  CHAIN_COMPLETED: "error",
  CHAIN_TIMEOUT: "deadline_exceeded",
  DEADLINE_EXCEEDED: "deadline_exceeded",
  CANCELLED: "cancelled",
  BACKEND_UNAVAILABLE: "backend_unavailable",
  UPSTREAM_UNAVAILABLE: "error",
  UPSTREAM_TIMEOUT: "error",
  SHUTTING_DOWN: "shutting_down",
  INVALID_ARGUMENT: "invalid_argument",
  NOT_FOUND: "not_found",
  INTERNAL: "error",
};

/** Where a failure points the caller (google.rpc.ErrorInfo metadata, MCP `_meta`). */
export interface ErrorContext {
  /** The approval the call waits on, or that decided it. */
  approvalId?: string | null;
  /** The dashboard page where a human decides the approval (absolute URL). */
  reviewUrl?: string | null;
  /** The policy that decided. */
  policyName?: string | null;
  /** The request field that was invalid (google.rpc.BadRequest field violation). */
  field?: string | null;
}

/** An invocation failure with its gRPC mapping. `message` never carries a secret or payload. */
export class GatewayError extends Error {
  /** The gRPC status code. */
  readonly grpcCode: GrpcStatus;
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** The decision the service made, when it made one. */
    readonly decision: PolicyDecision | null = null,
    /** Approval, review URL, policy and field of the failure, when known. */
    readonly context: ErrorContext = {},
  ) {
    super(message);
    this.name = "GatewayError";
    this.grpcCode = grpcCodeOf[code];
  }

  /** The same failure with more context (the decision's approval and policy are filled in). */
  withContext(context: ErrorContext): GatewayError {
    return new GatewayError(this.code, this.message, this.decision, { ...this.context, ...context });
  }

  /** The `decision` label of tollgate_sidecar_invocations_total. */
  get result(): InvocationResult {
    return resultOf[this.code];
  }
}

/** Bad input; `field` leads the message (e.g. "agent_name: is required"). */
export const invalidArgument = (field: string, message: string) =>
  new GatewayError(ErrorCode.INVALID_ARGUMENT, `${field}: ${message}`, null, { field });

/**
 * Maps anything thrown while getting a decision (SDK errors, abort reasons) to a GatewayError.
 * Unknown errors become INTERNAL with a generic message (details go to the log).
 */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (err instanceof ServiceKillSwitchError)
    return new GatewayError("KILL_SWITCH", err.message, err.decision);
  if (err instanceof ActionDeniedError) return new GatewayError("ACTION_DENIED", err.message, err.decision);
  if (err instanceof ChainAutoPausedError) return new GatewayError("AUTO_PAUSED", err.message, err.decision);
  if (err instanceof PolicyViolationError) {
    const code = err.code === ApiErrorCode.APPROVAL_PENDING ? "APPROVAL_PENDING" : "ACTION_DENIED";
    return new GatewayError(code, err.message, err.decision);
  }
  if (err instanceof ChainTimeoutError) return new GatewayError("CHAIN_TIMEOUT", err.message);
  if (err instanceof BackendUnavailableError) return new GatewayError("BACKEND_UNAVAILABLE", err.message);
  if (err instanceof ServiceApiError) {
    if (err.code === ApiErrorCode.CHAIN_COMPLETED) return new GatewayError("CHAIN_COMPLETED", err.message);
    if (err.statusCode === 404) return new GatewayError("NOT_FOUND", err.message);
    if (err.statusCode === 400) return new GatewayError("INVALID_ARGUMENT", err.message);
    if (err.statusCode === 401 || err.statusCode === 403) {
      return new GatewayError("INTERNAL", "the governance service rejected the sidecar's API key");
    }
    return new GatewayError("INTERNAL", err.message);
  }
  if (err instanceof InvalidArgumentError) {
    const first = err.issues[0]!;
    return invalidArgument(requestField(first.field), first.message);
  }
  return new GatewayError("INTERNAL", "internal error");
}

/**
 * The request field an SDK argument issue stands for: `action.agentName` → `agent_name`,
 * `action.payload.x` → `payload.x` (the SDK's action fields are the request's, camelCased).
 */
function requestField(sdkField: string): string {
  const [, first = "request", ...rest] = sdkField.split(".");
  return [first.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), ...rest].join(".");
}
