/**
 * Response bodies of the HTTP routes that the other contract modules do not already describe:
 * health, the admin API, approval lists, receipts, signing keys, the chain detail with its
 * evidence and the evaluation preview. The service declares them as Fastify response schemas
 * (so they are in GET /openapi.json and every answer is parsed through them on its way out,
 * src/service/openapi.ts) and clients may parse with them. Objects are `looseObject`: they name
 * what a client may rely on and pass through anything else the service adds, so declaring them
 * changed no answer. Times are ISO 8601 UTC strings. Snake_case, as every wire shape.
 */
import { z } from "zod";
import { OutcomeSchema } from "../../policy/schema.js";
import { PreEventChainSignedReceiptSchema, SignedReceiptSchema } from "../../receipts/schema.js";
import { ApprovalViewSchema } from "./approvals.js";
import { ChainDetailSchema, WireDecisionSchema } from "./chains.js";
import { ApprovalsViewSchema, EventsViewSchema } from "./verification.js";

/** GET /healthz, GET /readyz (200 ready; 503 shutting_down or database_unavailable). */
export const HealthSchema = z.looseObject({
  status: z.enum(["ok", "ready", "shutting_down", "database_unavailable"]),
});

/** GET /metrics: the Prometheus text exposition format. */
export const MetricsTextSchema = z.string();

/** A kill switch or pause of an organization. */
const ToggleViewSchema = z.looseObject({ active: z.boolean(), reason: z.string().nullable() });

/** An organization as the admin API shows it (PUT/GET /v1/admin/organizations/{slug}, kill-switch, pause). */
export const OrganizationViewSchema = z.looseObject({
  organization: z.string(),
  display_name: z.string().nullable(),
  environment: z.string(),
  kill_switch: ToggleViewSchema,
  pause: ToggleViewSchema,
  approval_timeout_hours: z.number(),
  evaluation_mode: z.string(),
  runaway_limits: z.record(z.string(), z.unknown()),
  managed_by: z.string().nullable(),
  /** Content hash of the organization, its policies and teams (changes with any of them). */
  version: z.string(),
});

/** PUT /v1/admin/organizations/{slug}: 201 created, 200 updated. */
export const OrganizationUpsertSchema = OrganizationViewSchema.extend({ created: z.boolean() });

/** A named policy of an organization (GET /v1/admin/organizations/{slug} → policies[]). */
export const PolicyViewSchema = z.looseObject({
  name: z.string(),
  config: z.record(z.string(), z.unknown()),
  policy_version: z.string().nullable(),
  version: z.string(),
  managed_by: z.string().nullable(),
  updated_at: z.string(),
});

/** An approver team (GET /v1/admin/organizations/{slug} → approver_teams[]). */
export const ApproverTeamViewSchema = z.looseObject({
  name: z.string(),
  approvers: z.array(z.looseObject({ email: z.string() })),
  fallback_approvers: z.array(z.string()),
  version: z.string(),
  managed_by: z.string().nullable(),
});

/** GET /v1/admin/organizations/{slug}: the organization, its policies, teams and the merged configuration. */
export const OrganizationDetailSchema = OrganizationViewSchema.extend({
  policies: z.array(PolicyViewSchema),
  approver_teams: z.array(ApproverTeamViewSchema),
  effective_config: z.record(z.string(), z.unknown()),
});

/** DELETE of an organization, policy or approver team: idempotent, `deleted` false when it was absent. */
export const DeletedSchema = z.looseObject({ deleted: z.boolean() });

/** PUT .../policies/{name} and .../approver-teams/{name}: the stored version and the organization's new one. */
export const NamedWriteSchema = z.looseObject({
  organization: z.string(),
  name: z.string(),
  version: z.string(),
  organization_version: z.string(),
});

/** PUT .../policies/{name}. */
export const PolicyWriteSchema = NamedWriteSchema.extend({ policy_version: z.string().nullable() });

/** PUT .../members/{email}. */
export const MemberWriteSchema = z.looseObject({
  organization: z.string(),
  email: z.string(),
  roles: z.array(z.string()),
});

/** An API key's record: never the key itself. */
export const ApiKeyViewSchema = z.looseObject({
  key_id: z.string(),
  name: z.string(),
  role: z.string(),
  /** The key's first characters, to recognize it. */
  prefix: z.string(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
});

/** POST .../api-keys → 201: the plaintext key, returned once (only a hash is stored). */
export const ApiKeyCreatedSchema = z.looseObject({
  organization: z.string(),
  key_id: z.string(),
  api_key: z.string(),
  prefix: z.string(),
  name: z.string(),
  role: z.string(),
  created_at: z.string(),
});

/** GET .../api-keys, oldest first. */
export const ApiKeyListSchema = z.looseObject({ api_keys: z.array(ApiKeyViewSchema) });

/** POST .../api-keys/{key_id}/revoke: idempotent. */
export const ApiKeyRevokedSchema = z.looseObject({ key_id: z.string(), revoked: z.literal(true) });

/** GET /v1/approvals: approvals with what was asked, newest first. */
export const ApprovalListSchema = z.looseObject({
  approvals: z.array(
    ApprovalViewSchema.extend({
      chain_name: z.string(),
      agent_name: z.string(),
      action_type: z.string(),
      action_name: z.string(),
      payload: z.record(z.string(), z.unknown()),
      cumulative_metrics: z.record(z.string(), z.unknown()),
    }),
  ),
});

/** GET /v1/chains/{chain_id}/receipt, GET /v1/receipts/{receipt_id}: the signed receipt as stored, either format. */
export const StoredReceiptSchema = z.union([SignedReceiptSchema, PreEventChainSignedReceiptSchema]);

/** One public key of a JWKS (GET /.well-known/tollgate/{receipt,approval}-keys.json). */
export const PublicJwkSchema = z.looseObject({
  kid: z.string(),
  kty: z.string(),
  /**
   * active: signs now; retired: rotated out, kept to verify what it signed; revoked: what it
   * signed at or after revoked_at is refused (ADR 0010).
   */
  status: z.enum(["active", "retired", "revoked"]),
  /** Validity period, ISO 8601 UTC: created, rotated out (null: still active), revoked (null: never). */
  created_at: z.string(),
  retired_at: z.string().nullable().optional(),
  revoked_at: z.string().nullable().optional(),
});

/** GET /.well-known/tollgate/{receipt,approval}-keys.json. */
export const JwksSchema = z.looseObject({ keys: z.array(PublicJwkSchema) });

/** POST /v1/chains/{chain_id}/actions/evaluate: the decision the action would get now; nothing recorded. */
export const PreviewResponseSchema = WireDecisionSchema.extend({
  policy_decision: OutcomeSchema,
  chain_id: z.string(),
  category: z.string(),
  recorded: z.literal(false),
});

/** Whether a chain's stored events and approvals still match its signed receipt. */
export const ChainEvidenceSchema = z.looseObject({
  status: z.enum(["valid", "invalid", "no_receipt"]),
  receipt_id: z.string().nullable(),
  receipt_number: z.string().nullable(),
  receipt_format: z.enum(["event_chain", "pre_event_chain"]).nullable(),
  events: EventsViewSchema.nullable(),
  approvals: ApprovalsViewSchema.nullable(),
  problems: z.array(z.string()),
});

/** GET /v1/chains/{chain_id}: the chain, its events in order and their evidence. */
export const ChainWithEvidenceSchema = ChainDetailSchema.extend({ evidence: ChainEvidenceSchema });
