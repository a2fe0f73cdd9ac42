/**
 * Wire shapes of verification (spec: "Verification results", "Public verification token",
 * "Versioning"): the authenticated v2 results for receipts, approvals and checkpoints, the
 * minimized public result, the legacy receipt result, and the public verification token routes.
 * The service builds exactly these types; the client libraries parse the answers with these
 * schemas (`z.object` strips what a newer service adds, so old clients keep working).
 * Field names beyond overall_status and integrity.status are ours (README "Verification").
 * No shape here carries a raw body, HMAC, signature, hash or plaintext token.
 * Snake_case, as every wire shape; `X.enum` names a value without a string literal.
 */
import { z } from "zod";
// Type-only from receipts/checkpoint.ts: its code needs canonicalization, which clients do not ship.
import type { CheckpointLogStatus, CheckpointSignatureStatus } from "../../receipts/checkpoint.js";
import type { EvidenceStatus as ReceiptsEvidenceStatus } from "../../receipts/evidence.js";
import {
  IntegrityStatusSchema,
  LinkStatusSchema,
  ReceiptFormatSchema,
  VerifiedPrincipalSchema,
} from "../../receipts/schema.js";

/**
 * Overall result of a v2 verification: valid (every local check passed), invalid (one failed);
 * approvals add pending (not decided yet: nothing to verify) and unsigned (resolved without an
 * attestation: before signing was enabled, or by a path without keys).
 */
export const OverallStatusSchema = z.enum(["valid", "invalid", "pending", "unsigned"]);
export type OverallStatus = z.infer<typeof OverallStatusSchema>;

/**
 * Ed25519 signature status: valid; invalid; missing (the artifact should carry a signature and
 * has none); unknown_key (signed with a key id the service has no record of for that purpose);
 * not_applicable (nothing signed yet: a pending approval).
 */
export const SignatureStatusSchema = z.enum(["valid", "invalid", "missing", "unknown_key", "not_applicable"]);
export type SignatureStatus = z.infer<typeof SignatureStatusSchema>;

/**
 * Key-trust status of the signing key: trusted (the current key of its purpose); not_evaluated
 * (a historical key retired by rotation, as the spec says for historical keys); revoked (the key
 * was revoked and the artifact was signed at or after the revocation time: refused, the overall
 * result is invalid); signed_before_revocation (the key was revoked later: the signature still
 * verifies); unknown (not in the service's key store); not_applicable (no signature). ADR 0010.
 */
export const KeyStatusSchema = z.enum([
  "trusted",
  "not_evaluated",
  "revoked",
  "signed_before_revocation",
  "unknown",
  "not_applicable",
]);
export type KeyStatus = z.infer<typeof KeyStatusSchema>;
export const KeyStatus = KeyStatusSchema.enum;

/**
 * Whether a chain's stored events (or approvals) match what its receipt committed to: valid;
 * invalid (altered, deleted, inserted or reordered, named in problems); not_evaluated (a receipt
 * issued before the event hash chain committed to neither — not a failure — or its body cannot
 * be read, which fails integrity). The same values as the offline check (src/receipts/evidence.ts).
 */
export const EvidenceStatusSchema = z.enum([
  "valid",
  "invalid",
  "not_evaluated",
]) satisfies z.ZodType<ReceiptsEvidenceStatus>;
export type EvidenceStatus = z.infer<typeof EvidenceStatusSchema>;

/** External anchor status: no timestamp authority or blockchain anchoring is configured. */
export const AnchorStatusSchema = z.enum(["not_configured"]);
export type AnchorStatus = z.infer<typeof AnchorStatusSchema>;
export const AnchorStatus = AnchorStatusSchema.enum;

const AnchorSchema = z.object({ status: AnchorStatusSchema });

/** An artifact's Ed25519 signature as verified (the signature itself is never returned). */
export const SignatureViewSchema = z.object({
  status: SignatureStatusSchema,
  algorithm: z.literal("Ed25519"),
  kid: z.string().nullable(),
  key_status: KeyStatusSchema,
});
export type SignatureView = z.infer<typeof SignatureViewSchema>;

/** The `events` block of a receipt verification. */
export const EventsViewSchema = z.object({
  status: EvidenceStatusSchema,
  /** Stored events of the chain. */
  event_count: z.number().int(),
  /** Sequences of the stored or committed events that do not match, ascending. */
  mismatched_sequences: z.array(z.number().int()),
});
export type EventsView = z.infer<typeof EventsViewSchema>;

/** The `approvals` block of a receipt verification. */
export const ApprovalsViewSchema = z.object({
  status: EvidenceStatusSchema,
  /** Stored approvals of the chain. */
  approval_count: z.number().int(),
  /** Ids of the approvals that do not match. */
  mismatched_approval_ids: z.array(z.string()),
});
export type ApprovalsView = z.infer<typeof ApprovalsViewSchema>;

/** GET /v1/verification/v2/receipts/{receipt_id} (member or admin). */
export const ReceiptVerificationSchema = z.object({
  artifact_type: z.literal("receipt"),
  receipt_id: z.string(),
  receipt_number: z.string(),
  chain_id: z.string(),
  /** Position in the organization's receipt chain (1 = genesis). */
  sequence: z.number().int(),
  /**
   * pre_event_chain: issued before the event hash chain, so `events` and `approvals` are
   * not_evaluated; event_chain: commits to both; null when the body cannot be read.
   */
  receipt_format: ReceiptFormatSchema.nullable(),
  overall_status: z.enum(["valid", "invalid"]),
  integrity: z.object({ status: z.enum(["valid", "invalid"]) }),
  chain: z.object({ status: LinkStatusSchema, predecessor_receipt_number: z.string().nullable() }),
  signature: SignatureViewSchema,
  /** The chain's stored events against the receipt's event hash chain. */
  events: EventsViewSchema,
  /** The chain's stored approvals against the receipt and their own signatures. */
  approvals: ApprovalsViewSchema,
  /**
   * The verified workload identities the receipt's signed events name (issue 27), distinct, in
   * the order they first acted; empty when every action came from an API key or session.
   * Only as trustworthy as `overall_status`.
   */
  principals: z.array(VerifiedPrincipalSchema).default([]),
  timestamp_authority_anchor: AnchorSchema,
  blockchain_anchor: AnchorSchema,
  /** Human-readable reasons for every failed check (receipt numbers only); empty when valid. */
  problems: z.array(z.string()),
  /** ISO 8601 UTC. */
  verified_at: z.string(),
});
export type ReceiptVerification = z.infer<typeof ReceiptVerificationSchema>;

/** Admin-only allowlisted audit context of an approval verification. */
export const ApprovalAuditContextSchema = z.object({
  decided_by: z.string().nullable(),
  decision: z.string(),
  exception: z.object({ duration: z.string().nullable(), expires_at: z.string().nullable() }).nullable(),
  /** A generated sentence plus the reviewer's notes, sanitized (secrets and e-mail addresses redacted, ≤ 280 characters of notes). */
  review_summary: z.string(),
});
export type ApprovalAuditContext = z.infer<typeof ApprovalAuditContextSchema>;

/** GET /v1/verification/v2/approvals/{approval_id} (member or admin; audit_context for admins only). */
export const ApprovalVerificationSchema = z.object({
  artifact_type: z.literal("approval"),
  approval_id: z.string(),
  chain_id: z.string(),
  /** The approval status (ApprovalStatus of wire.ts). */
  status: z.string(),
  /** ISO 8601 UTC. */
  requested_at: z.string(),
  decided_at: z.string().nullable(),
  overall_status: OverallStatusSchema,
  integrity: z.object({ status: IntegrityStatusSchema }),
  signature: SignatureViewSchema,
  timestamp_authority_anchor: AnchorSchema,
  blockchain_anchor: AnchorSchema,
  problems: z.array(z.string()),
  verified_at: z.string(),
  audit_context: ApprovalAuditContextSchema.optional(),
});
export type ApprovalVerification = z.infer<typeof ApprovalVerificationSchema>;

/** POST /v1/verification/v2/checkpoints: does the stored receipt log still extend a kept checkpoint? */
export const CheckpointVerificationSchema = z.object({
  artifact_type: z.literal("checkpoint"),
  organization: z.string(),
  sequence: z.number().int(),
  receipt_number: z.string().nullable(),
  overall_status: z.enum(["valid", "invalid"]),
  signature: z.object({
    status: z.enum(["valid", "invalid", "unknown_key"]) satisfies z.ZodType<CheckpointSignatureStatus>,
    algorithm: z.literal("Ed25519"),
    kid: z.string(),
    key_status: KeyStatusSchema,
  }),
  /** Whether the stored receipt log still extends the checkpoint, and where it ends now. */
  log: z.object({
    status: z.enum([
      "extended",
      "truncated",
      "missing",
      "forked",
      "not_covered",
      "other_organization",
    ]) satisfies z.ZodType<CheckpointLogStatus>,
    latest_sequence: z.number().int(),
  }),
  problems: z.array(z.string()),
  verified_at: z.string(),
});
export type CheckpointVerification = z.infer<typeof CheckpointVerificationSchema>;

/**
 * GET /public/v2/verify/{opaque_token}: the minimized result (spec: public verification) and
 * nothing else — no signatures, HMACs, organization identifiers, actors or payloads.
 */
export const PublicVerificationResultSchema = z.object({
  artifact_type: z.enum(["receipt", "approval"]),
  verification_status: OverallStatusSchema,
  integrity_status: IntegrityStatusSchema,
  signature_status: SignatureStatusSchema,
  key_status: KeyStatusSchema,
  timestamp_anchor_status: AnchorStatusSchema,
  verified_at: z.string(),
});
export type PublicVerificationResult = z.infer<typeof PublicVerificationResultSchema>;

/** GET /v1/receipts/{receipt_id}/verify (legacy, compatibility only). */
export const LegacyReceiptVerificationSchema = z.object({
  receipt_id: z.string(),
  receipt_number: z.string(),
  valid: z.boolean(),
  signature_valid: z.boolean(),
  chain_valid: z.boolean(),
  verified_at: z.string(),
});
export type LegacyReceiptVerification = z.infer<typeof LegacyReceiptVerificationSchema>;

// ---------------------------------------------------------------------------------------------
// Public verification tokens (admin): issue, list, revoke.

/** Artifact kinds a public verification token may point at. */
export const ArtifactTypeSchema = z.enum(["approval", "receipt"]);
export type ArtifactType = z.infer<typeof ArtifactTypeSchema>;
export const ArtifactType = ArtifactTypeSchema.enum;

/** Token status values: active until revoked (tokens do not expire; README "Verification"). */
export const TokenStatusSchema = z.enum(["active", "revoked"]);
export type TokenStatus = z.infer<typeof TokenStatusSchema>;
export const TokenStatus = TokenStatusSchema.enum;

/** Body of POST /v1/public-verification-tokens. */
export const IssueTokenSchema = z
  .object({ artifact_type: ArtifactTypeSchema, artifact_id: z.uuid() })
  .strict();
export type IssueToken = z.infer<typeof IssueTokenSchema>;

/** Query of GET /v1/public-verification-tokens (limit: 1..500, default 100). */
export const ListTokensQuerySchema = z
  .object({
    status: TokenStatusSchema.optional(),
    artifact_type: ArtifactTypeSchema.optional(),
    artifact_id: z.uuid().optional(),
    limit: z.coerce.number().int().min(1).max(500).default(100),
  })
  .strict();
export type ListTokensQuery = z.infer<typeof ListTokensQuerySchema>;

/** A token record (list and revoke answers): never the plaintext or its hash. Times ISO 8601 UTC. */
export const TokenRecordSchema = z.object({
  token_id: z.string(),
  artifact_type: ArtifactTypeSchema,
  artifact_id: z.string(),
  status: TokenStatusSchema,
  created_by: z.string(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
});
export type TokenRecord = z.infer<typeof TokenRecordSchema>;

/** GET /v1/public-verification-tokens, newest first. */
export const TokenListSchema = z.object({ tokens: z.array(TokenRecordSchema) });
export type TokenList = z.infer<typeof TokenListSchema>;

/** POST /v1/public-verification-tokens/{token_id}/revoke: idempotent, the first revocation time stays. */
export const RevokedTokenSchema = z.object({
  token_id: z.string(),
  artifact_type: ArtifactTypeSchema,
  artifact_id: z.string(),
  status: z.literal("revoked"),
  revoked_at: z.string(),
});
export type RevokedToken = z.infer<typeof RevokedTokenSchema>;

/**
 * POST /v1/public-verification-tokens → 201: the plaintext token and its suggested public path,
 * returned once (only a hash is stored; a lost link cannot be recovered).
 */
export const IssuedTokenSchema = z.object({
  token_id: z.string(),
  token: z.string(),
  public_path: z.string(),
  public_url: z.string(),
  artifact_type: ArtifactTypeSchema,
  artifact_id: z.string(),
  status: TokenStatusSchema,
  created_at: z.string(),
});
export type IssuedToken = z.infer<typeof IssuedTokenSchema>;
