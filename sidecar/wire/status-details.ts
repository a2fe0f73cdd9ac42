/**
 * The standard rich error model of gRPC: `grpc-status-details-bin` carries a serialized
 * google.rpc.Status (proto/google/rpc/status.proto) whose details are a google.rpc.ErrorInfo —
 * reason = the Tollgate error code (the `tollgate-error-code` trailer), domain "tollgate.dev",
 * metadata approval_id, policy_name, review_url and chain_id when known — and, for bad input, a
 * google.rpc.BadRequest with the field violation. Clients decode it with their gRPC library's
 * status helpers (e.g. grpcio-status, @grpc/grpc-js + google-protobuf, Go status.FromError).
 * Encoded with protobufjs (the runtime under @grpc/proto-loader).
 */
import path from "node:path";
import protobuf from "protobufjs";
import type { GatewayError } from "./errors.js";
import { PROTO_ROOT } from "./proto.js";

/** ErrorInfo.domain of every Tollgate error. */
export const ERROR_DOMAIN = "tollgate.dev";
/** Trailer name of the standard details. */
export const STATUS_DETAILS_KEY = "grpc-status-details-bin";

const TYPE_URL_PREFIX = "type.googleapis.com/";

let types: { Status: protobuf.Type; ErrorInfo: protobuf.Type; BadRequest: protobuf.Type } | null = null;

/** Loads (once per process) google.rpc.Status, ErrorInfo and BadRequest. */
function rpcTypes() {
  if (!types) {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => path.join(PROTO_ROOT, target);
    root.loadSync(["google/rpc/status.proto", "google/rpc/error_details.proto"], { keepCase: true });
    types = {
      Status: root.lookupType("google.rpc.Status"),
      ErrorInfo: root.lookupType("google.rpc.ErrorInfo"),
      BadRequest: root.lookupType("google.rpc.BadRequest"),
    };
  }
  return types;
}

const pack = (type: protobuf.Type, value: Record<string, unknown>) => ({
  type_url: `${TYPE_URL_PREFIX}${type.fullName.replace(/^\./, "")}`,
  value: type.encode(type.fromObject(value)).finish(),
});

/**
 * The serialized google.rpc.Status of `e` (the value of `grpc-status-details-bin`).
 * @param chainId the chain of the call, when known.
 */
export function encodeStatusDetails(e: GatewayError, chainId: string | null): Buffer {
  const { Status, ErrorInfo, BadRequest } = rpcTypes();
  const metadata: Record<string, string> = {};
  const approvalId = e.context.approvalId ?? e.decision?.approval_id;
  const policyName = e.context.policyName ?? e.decision?.policy_name;
  if (approvalId) metadata.approval_id = approvalId;
  if (policyName) metadata.policy_name = policyName;
  if (e.context.reviewUrl) metadata.review_url = e.context.reviewUrl;
  if (chainId) metadata.chain_id = chainId;
  const details = [pack(ErrorInfo, { reason: e.code, domain: ERROR_DOMAIN, metadata })];
  if (e.context.field)
    details.push(
      pack(BadRequest, {
        field_violations: [{ field: e.context.field, description: e.message, reason: e.code }],
      }),
    );
  const status = Status.fromObject({ code: e.grpcCode, message: e.message, details });
  return Buffer.from(Status.encode(status).finish());
}

/** What a client finds in `grpc-status-details-bin` (tests, tools). */
export interface DecodedStatus {
  code: number;
  message: string;
  errorInfo: { reason: string; domain: string; metadata: Record<string, string> } | null;
  fieldViolations: { field: string; description: string; reason: string }[];
}

/** Decodes a `grpc-status-details-bin` value. @throws Error when it is not a google.rpc.Status. */
export function decodeStatusDetails(bytes: Uint8Array): DecodedStatus {
  const { Status, ErrorInfo, BadRequest } = rpcTypes();
  const status = Status.toObject(Status.decode(bytes), { defaults: true }) as {
    code: number;
    message: string;
    details: { type_url: string; value: Uint8Array }[];
  };
  const out: DecodedStatus = {
    code: status.code,
    message: status.message,
    errorInfo: null,
    fieldViolations: [],
  };
  for (const d of status.details) {
    const name = d.type_url.slice(d.type_url.lastIndexOf("/") + 1);
    if (name === "google.rpc.ErrorInfo")
      out.errorInfo = ErrorInfo.toObject(ErrorInfo.decode(d.value), {
        defaults: true,
      }) as DecodedStatus["errorInfo"];
    if (name === "google.rpc.BadRequest") {
      const br = BadRequest.toObject(BadRequest.decode(d.value), { defaults: true }) as {
        field_violations: DecodedStatus["fieldViolations"];
      };
      out.fieldViolations.push(...br.field_violations);
    }
  }
  return out;
}
