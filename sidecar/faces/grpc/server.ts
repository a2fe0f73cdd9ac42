/**
 * The gRPC face: tollgate.v1.ToolGateway handlers over the Governor, standard health
 * (grpc.health.v1 via grpc-health-check) and server reflection (@grpc/reflection).
 *
 * Errors follow proto/tollgate/v1/gateway.proto: `callback({ code, details, metadata })` with
 * the trailing metadata `tollgate-error-code`, `grpc-status-details-bin` (google.rpc.Status with
 * ErrorInfo and BadRequest, wire/status-details.ts) and, when the service decided,
 * `tollgate-decision-bin` (a serialized tollgate.v1.Decision).
 *
 * Approval waits: Invoke and WatchInvoke pass the call's idempotency key (field
 * `idempotency_key`, else metadata `tollgate-idempotency-key`) to the Governor, which re-attaches
 * a retry to its pending approval. WatchInvoke streams ApprovalUpdates (a heartbeat every
 * `WATCH_HEARTBEAT_MS` while pending) and ends with the InvokeResponse.
 */
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import type { WaitUpdate } from "../../core/approval-wait.js";
import type { Governor, InvokeResult } from "../../core/governor.js";
import type { ApprovalUpdate } from "../../generated/tollgate/v1/ApprovalUpdate.js";
import type { InvokeRequest__Output } from "../../generated/tollgate/v1/InvokeRequest.js";
import type { InvokeResponse } from "../../generated/tollgate/v1/InvokeResponse.js";
import type { InvokeUpdate } from "../../generated/tollgate/v1/InvokeUpdate.js";
import type { ToolGatewayHandlers } from "../../generated/tollgate/v1/ToolGateway.js";
import type { Logger } from "../../logger.js";
import { annotateInvoke, executeToolSpan, grpcServerSpan } from "../../tracing.js";
import { toProtoDecision } from "../../wire/decision.js";
import { ErrorCode, GatewayError } from "../../wire/errors.js";
import { encodeDecision, gatewayService, SERVICE_NAME } from "../../wire/proto.js";
import { encodeStatusDetails, STATUS_DETAILS_KEY } from "../../wire/status-details.js";
import { jsonToStruct } from "../../wire/struct.js";
import {
  type InvokeInput,
  parseChainId,
  parseComplete,
  parseGetDecision,
  parseIdempotencyKey,
  parseInvoke,
  parseOpenChain,
} from "../../wire/validate.js";
import { createReflectionService } from "./reflection.js";

/** Metadata key of the idempotency key (the request field `idempotency_key` wins). */
export const IDEMPOTENCY_KEY_METADATA = "tollgate-idempotency-key";
/** WatchInvoke repeats the pending ApprovalUpdate this often, in ms. */
export const WATCH_HEARTBEAT_MS = 15_000;

/** A grpc ServiceError for a GatewayError, with the trailing metadata of the contract. */
export function toServiceError(e: GatewayError, chainId: string | null): Partial<grpc.ServiceError> {
  const metadata = new grpc.Metadata();
  metadata.set("tollgate-error-code", e.code);
  metadata.set(STATUS_DETAILS_KEY, encodeStatusDetails(e, chainId));
  if (e.decision)
    metadata.set("tollgate-decision-bin", encodeDecision(toProtoDecision(e.decision, chainId ?? "")));
  return { code: e.grpcCode, details: e.message, metadata };
}

/**
 * Runs a handler body (in the call's server span, tracing.ts) with a controller that is aborted
 * when the call is cancelled or its deadline passes (grpc-js ends the call with DEADLINE_EXCEEDED itself and then reports it
 * cancelled), and answers through the callback, mapping every error.
 *
 * grpc-js also emits `cancelled` after every call it has answered; once the body has settled
 * the listener ignores it, so a finished call does not abort its controller (which cost an
 * error with a stack trace and an abort event per call, on the hot path).
 */
function answer<T>(
  method: string,
  call: grpc.ServerUnaryCall<unknown, unknown>,
  callback: grpc.sendUnaryData<T>,
  log: Logger,
  chainId: string | null,
  body: (controller: AbortController) => Promise<T>,
): void {
  const controller = new AbortController();
  let settled = false;
  call.once("cancelled", () => {
    if (settled) return;
    controller.abort(cancelReason(call));
  });
  grpcServerSpan(call, method, () => body(controller)).then(
    (value) => {
      settled = true;
      callback(null, value);
    },
    (err: unknown) => {
      settled = true;
      const e = err instanceof GatewayError ? err : new GatewayError(ErrorCode.INTERNAL, "internal error");
      if (!(err instanceof GatewayError)) log.error({ err }, "unexpected error in a gRPC handler");
      callback(toServiceError(e, chainId));
    },
  );
}

/** The abort reason of a call that grpc-js reports cancelled: its deadline passed, or the caller cancelled. */
function cancelReason(call: { getDeadline(): grpc.Deadline }): GatewayError {
  const deadline = call.getDeadline();
  const ms = deadline instanceof Date ? deadline.getTime() : Number(deadline);
  const expired = Number.isFinite(ms) && Date.now() >= ms - 5;
  return expired
    ? new GatewayError(
        ErrorCode.DEADLINE_EXCEEDED,
        "the call's deadline passed; nothing was forwarded (a pending approval stays pending: retry the same call to wait for it)",
      )
    : new GatewayError(ErrorCode.CANCELLED, "the caller cancelled; nothing was forwarded");
}

/** The InvokeResponse of an allowed call. */
function toInvokeResponse(r: InvokeResult): InvokeResponse {
  return {
    decision: toProtoDecision(r.decision, r.chainId),
    forwarded: r.forwarded,
    result_json: r.result?.resultJson ?? "",
    upstream_error: r.result?.isError ?? false,
    upstream_status: r.result?.status ?? 0,
    upstream_duration_ms: r.upstreamDurationMs,
  };
}

/** The ApprovalUpdate of a wait status. */
export function toApprovalUpdate(u: WaitUpdate): ApprovalUpdate {
  return {
    approval_id: u.approvalId,
    status: u.status,
    review_url: u.reviewUrl,
    policy_name: u.policyName ?? undefined,
    reason: u.reason,
    waited_seconds: Math.round(u.waitedMs) / 1000,
  };
}

/**
 * Validates an Invoke and its idempotency key (field, else metadata).
 * @throws GatewayError INVALID_ARGUMENT (counted as invalid).
 */
function parseInvokeCall(
  o: GrpcServerOptions,
  request: InvokeRequest__Output,
  metadata: grpc.Metadata,
): { input: InvokeInput; idempotencyKey: string | null } {
  try {
    const input = parseInvoke(request, o.upstreamNames, o.maxPayloadBytes);
    const fromMetadata = metadata.get(IDEMPOTENCY_KEY_METADATA)[0];
    const idempotencyKey = parseIdempotencyKey(
      request.idempotency_key,
      typeof fromMetadata === "string" ? fromMetadata : undefined,
    );
    return { input, idempotencyKey };
  } catch (err) {
    o.governor.countInvalid("grpc");
    throw err;
  }
}

/**
 * WatchInvoke: Invoke with ApprovalUpdates streamed while the call waits, then the
 * InvokeResponse; errors end the stream with the same status and trailers as Invoke. Ending the
 * stream early (cancel, deadline) detaches from the wait like a unary Invoke.
 */
function watchInvoke(
  o: GrpcServerOptions,
  call: grpc.ServerWritableStream<InvokeRequest__Output, InvokeUpdate>,
): void {
  const controller = new AbortController();
  let settled = false;
  let heartbeat: NodeJS.Timeout | null = null;
  const stopHeartbeat = () => {
    if (heartbeat) clearInterval(heartbeat);
    heartbeat = null;
  };
  call.once("cancelled", () => {
    if (!settled) controller.abort(cancelReason(call));
    stopHeartbeat();
  });
  const chainId = call.request.chain_id || null;
  const run = async (): Promise<InvokeResponse> => {
    const { input, idempotencyKey } = parseInvokeCall(o, call.request, call.metadata);
    annotateInvoke(input);
    const r = await executeToolSpan(input.actionName, idempotencyKey, () =>
      o.governor.invoke(input, controller, "grpc", {
        idempotencyKey,
        onWait: (u) => {
          if (controller.signal.aborted) return;
          call.write({ approval: toApprovalUpdate(u) });
          stopHeartbeat();
          if (u.status === "pending") {
            const started = Date.now() - u.waitedMs;
            heartbeat = setInterval(
              () => call.write({ approval: toApprovalUpdate({ ...u, waitedMs: Date.now() - started }) }),
              WATCH_HEARTBEAT_MS,
            );
          }
        },
      }),
    );
    return toInvokeResponse(r);
  };
  grpcServerSpan(call, "WatchInvoke", run).then(
    (result) => {
      settled = true;
      stopHeartbeat();
      call.write({ result });
      call.end();
    },
    (err: unknown) => {
      settled = true;
      stopHeartbeat();
      const e = err instanceof GatewayError ? err : new GatewayError(ErrorCode.INTERNAL, "internal error");
      if (!(err instanceof GatewayError)) o.log.error({ err }, "unexpected error in WatchInvoke");
      call.emit("error", toServiceError(e, chainId)); // grpc-js ends the stream with this status
    },
  );
}

/** Options of the gRPC server. */
export interface GrpcServerOptions {
  governor: Governor;
  upstreamNames: ReadonlySet<string>;
  maxPayloadBytes: number;
  log: Logger;
}

/** The ToolGateway handlers. */
export function gatewayHandlers(o: GrpcServerOptions): ToolGatewayHandlers {
  const { governor, log } = o;
  return {
    OpenChain(call, callback) {
      answer("OpenChain", call, callback, log, null, async (controller) => {
        const req = parseOpenChain(call.request, o.maxPayloadBytes);
        return { chain_id: await governor.openChain(req.name, req.metadata, controller) };
      });
    },
    Invoke(call, callback) {
      const chainId = call.request.chain_id || null;
      answer("Invoke", call, callback, log, chainId, async (controller) => {
        const { input, idempotencyKey } = parseInvokeCall(o, call.request, call.metadata);
        annotateInvoke(input);
        return toInvokeResponse(
          await executeToolSpan(input.actionName, idempotencyKey, () =>
            governor.invoke(input, controller, "grpc", { idempotencyKey }),
          ),
        );
      });
    },
    WatchInvoke(call) {
      watchInvoke(o, call);
    },
    CompleteChain(call, callback) {
      answer("CompleteChain", call, callback, log, call.request.chain_id || null, async (controller) => {
        const req = parseComplete(call.request);
        const r = await governor.completeChain(req.chainId, req.failure, controller);
        return {
          chain_id: r.chain_id,
          status: r.status,
          receipt_id: r.receipt_id,
          receipt_number: r.receipt_number,
        };
      });
    },
    GetReceipt(call, callback) {
      answer("GetReceipt", call, callback, log, call.request.chain_id || null, async (controller) => {
        const chainId = parseChainId(call.request.chain_id);
        const receipt = await governor.getReceipt(chainId, controller);
        if (!receipt)
          throw new GatewayError(ErrorCode.NOT_FOUND, "the chain has no receipt yet (complete it first)");
        return { receipt: jsonToStruct(receipt as Record<string, unknown>) };
      });
    },
    GetDecision(call, callback) {
      answer("GetDecision", call, callback, log, call.request.chain_id || null, async (controller) => {
        const req = parseGetDecision(call.request);
        return toProtoDecision(await governor.getDecision(req.chainId, req.eventId, controller), req.chainId);
      });
    },
  };
}

/** A gRPC server with ToolGateway, health and reflection registered (not yet bound). */
export function createGrpcServer(o: GrpcServerOptions): {
  server: grpc.Server;
  health: HealthImplementation;
} {
  const server = new grpc.Server({
    "grpc.keepalive_time_ms": 60_000,
    "grpc.keepalive_timeout_ms": 20_000,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.http2.min_ping_interval_without_data_ms": 10_000,
    // Per-call channelz bookkeeping costs CPU on the hot path; nothing here reads it.
    "grpc.enable_channelz": 0,
    // Room above maxPayloadBytes so that an oversized payload gets our INVALID_ARGUMENT.
    "grpc.max_receive_message_length": Math.max(4 * 1024 * 1024, o.maxPayloadBytes * 4),
  });
  server.addService(gatewayService(), gatewayHandlers(o) as unknown as grpc.UntypedServiceImplementation);
  const health = new HealthImplementation({ "": "NOT_SERVING", [SERVICE_NAME]: "NOT_SERVING" });
  health.addToServer(server);
  createReflectionService().addToServer(server);
  return { server, health };
}

/** Binds `server` to host:port (port 0 picks one); resolves to the bound port. */
export function bindGrpc(server: grpc.Server, address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(port),
    );
  });
}
