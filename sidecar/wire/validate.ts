/**
 * Validation of gRPC input at the boundary, BEFORE anything reaches the service: a request that
 * fails here records no event. Messages start with the proto field name.
 */
import { z } from "zod";
import type { Struct__Output } from "../generated/google/protobuf/Struct.js";
import type { InvokeRequest__Output } from "../generated/tollgate/v1/InvokeRequest.js";
import { invalidArgument } from "./errors.js";
import { type JsonObject, structToJson, structToJsonSized } from "./struct.js";

/** A validated Invoke. */
export interface InvokeInput {
  chainId: string;
  agentName: string;
  /** Default tool_call. */
  actionType: string;
  actionName: string;
  payload: JsonObject;
  parentAgentName: string | null;
  /** null: record and decide only. */
  upstream: string | null;
}

const required = (max: number) =>
  z.string().trim().min(1, "is required").max(max, `must be at most ${max} characters`);
const optional = (max: number) =>
  z
    .string()
    .trim()
    .max(max, `must be at most ${max} characters`)
    .transform((v) => (v === "" ? null : v));

const chainId = z
  .string()
  .trim()
  .min(1, "is required")
  .pipe(z.uuid("must be a chain_id returned by OpenChain"));

const InvokeSchema = z.object({
  chain_id: chainId,
  agent_name: required(200),
  action_type: optional(100).transform((v) => v ?? "tool_call"),
  action_name: required(200),
  parent_agent_name: optional(200),
  upstream: optional(63),
});

const firstIssue = (error: z.ZodError) => {
  const issue = error.issues[0]!;
  return invalidArgument(issue.path.map(String).join(".") || "request", issue.message);
};

/**
 * Validates an Invoke request.
 * @param upstreams the configured upstream names.
 * @param maxPayloadBytes the largest payload accepted, as UTF-8 JSON bytes.
 * @throws GatewayError INVALID_ARGUMENT naming the field.
 */
export function parseInvoke(
  req: InvokeRequest__Output,
  upstreams: ReadonlySet<string>,
  maxPayloadBytes: number,
): InvokeInput {
  const parsed = InvokeSchema.safeParse(req);
  if (!parsed.success) throw firstIssue(parsed.error);
  const r = parsed.data;
  if (r.upstream !== null && !upstreams.has(r.upstream)) {
    throw invalidArgument(
      "upstream",
      `unknown upstream "${r.upstream}" (configured: ${[...upstreams].join(", ") || "none"})`,
    );
  }
  const payload = parsePayload(req.payload, maxPayloadBytes);
  return {
    chainId: r.chain_id,
    agentName: r.agent_name,
    actionType: r.action_type,
    actionName: r.action_name,
    payload,
    parentAgentName: r.parent_agent_name,
    upstream: r.upstream,
  };
}

/**
 * Converts a payload Struct and enforces the size limit.
 * @throws GatewayError INVALID_ARGUMENT on `payload`.
 */
export function parsePayload(struct: Struct__Output | null | undefined, maxPayloadBytes: number): JsonObject {
  const { json, sizeBound } = structToJsonSized(struct);
  // Most payloads are far below the limit: the bound proves it without serializing them.
  return sizeBound <= maxPayloadBytes ? json : checkPayloadSize(json, maxPayloadBytes);
}

/**
 * Returns `payload` when its JSON form has at most `maxPayloadBytes` UTF-8 bytes.
 * @throws GatewayError INVALID_ARGUMENT on `payload`.
 */
export function checkPayloadSize<T>(payload: T, maxPayloadBytes: number): T {
  const bytes = Buffer.byteLength(JSON.stringify(payload));
  if (bytes > maxPayloadBytes) {
    throw invalidArgument("payload", `is ${bytes} bytes as JSON; at most ${maxPayloadBytes} are accepted`);
  }
  return payload;
}

const OpenChainSchema = z.object({ name: required(200) });

/** Validates OpenChain. @throws GatewayError INVALID_ARGUMENT naming the field. */
export function parseOpenChain(req: { name?: string; metadata?: Struct__Output | null }, maxBytes: number) {
  const parsed = OpenChainSchema.safeParse(req);
  if (!parsed.success) throw firstIssue(parsed.error);
  const metadata = structToJson(req.metadata);
  if (Buffer.byteLength(JSON.stringify(metadata)) > maxBytes)
    throw invalidArgument("metadata", `is larger than ${maxBytes} bytes as JSON`);
  return { name: parsed.data.name, metadata };
}

const CompleteSchema = z.object({
  chain_id: chainId,
  failure: z
    .object({
      mode: required(200).optional().or(z.literal("")),
      message: z.string().max(2000, "must be at most 2000 characters"),
    })
    .nullable()
    .optional(),
});

/** Validates CompleteChain. @throws GatewayError INVALID_ARGUMENT naming the field. */
export function parseComplete(req: {
  chain_id?: string;
  failure?: { mode?: string; message?: string } | null;
}) {
  const parsed = CompleteSchema.safeParse(req);
  if (!parsed.success) throw firstIssue(parsed.error);
  const f = parsed.data.failure;
  if (f && !f.mode) throw invalidArgument("failure.mode", "is required when failure is set");
  return { chainId: parsed.data.chain_id, failure: f ? { mode: f.mode!, message: f.message } : null };
}

/** Validates a chain_id (GetReceipt). */
export function parseChainId(value: string | undefined): string {
  const parsed = chainId.safeParse(value ?? "");
  if (!parsed.success) throw invalidArgument("chain_id", parsed.error.issues[0]!.message);
  return parsed.data;
}

/** Validates GetDecision. */
export function parseGetDecision(req: { chain_id?: string; event_id?: string }) {
  const id = parseChainId(req.chain_id);
  const eventId = z
    .string()
    .trim()
    .min(1, "is required")
    .pipe(z.uuid("must be a UUID"))
    .safeParse(req.event_id ?? "");
  if (!eventId.success) throw invalidArgument("event_id", eventId.error.issues[0]!.message);
  return { chainId: id, eventId: eventId.data };
}

const IdempotencyKeySchema = z
  .string()
  .trim()
  .max(200, "must be at most 200 characters")
  .regex(/^[\x21-\x7e]*$/, "must be printable ASCII without spaces")
  .transform((v) => (v === "" ? null : v));

/**
 * The re-attach key of an Invoke: the request field `idempotency_key`, else the metadata
 * `tollgate-idempotency-key`; null when neither is set (the call's fingerprint is the key then).
 * @throws GatewayError INVALID_ARGUMENT naming the field or the metadata key.
 */
export function parseIdempotencyKey(field: string | undefined, metadata: string | undefined): string | null {
  // Most calls carry neither: nothing to validate.
  if (!field && metadata === undefined) return null;
  const fromField = IdempotencyKeySchema.safeParse(field ?? "");
  if (!fromField.success) throw invalidArgument("idempotency_key", fromField.error.issues[0]!.message);
  if (fromField.data) return fromField.data;
  const fromMetadata = IdempotencyKeySchema.safeParse(metadata ?? "");
  if (!fromMetadata.success)
    throw invalidArgument("tollgate-idempotency-key", fromMetadata.error.issues[0]!.message);
  return fromMetadata.data;
}
