/**
 * The receipt data contract (spec: "Resources and their fields" → Receipt, Approval,
 * Time-boxed exception; "Verification results"). These zod schemas are the single source of
 * truth for receipt storage, API responses, exports and their TypeScript types.
 *
 * Wire and JSON keys are the spec's snake_case. Every object is strict (unknown keys are
 * rejected), because the signature covers exactly the keys that are present: a key this
 * schema does not know would be signed but never shown. Optional facts are `null`, never
 * absent, so the signed form of a receipt has one shape per format: receipts issued before the
 * event hash chain have their own schema (`PreEventChainSignedReceiptSchema`; README
 * "Receipts"), chosen by `receiptFormatOf`.
 *
 * Choices where the spec says "not shown" (the README documents them):
 * - the receipt identifier inside the body is `receipt_id` (a UUID, like chain_id);
 * - every identifier (receipt, chain, approval, event, exception) is a UUID;
 * - timestamps are ISO 8601 UTC strings with a `Z` suffix (`Date.prototype.toISOString`);
 * - approvals and events_summary items have the shapes below;
 * - `signature` (HMAC-SHA256) is the spec's; `ed25519` is our addition for verification
 *   outside the service.
 */
import { z } from "zod";
import { parseReceiptNumber } from "./number.js";

/**
 * A strict object schema (unknown keys rejected) whose parsed output has its keys in canonical
 * (RFC 8785) order. zod writes output keys in shape order, and `canonicalJson` serializes
 * objects whose keys are already in canonical order without copying them, which halves the
 * cost of signing a large receipt. Shapes are declared in reading order; only the output (and
 * the order of validation issues) follows the canonical one.
 */
function signedObject<T extends z.core.$ZodLooseShape>(shape: T) {
  const entries = Object.entries(shape).sort(([a], [b]) => (a < b ? -1 : 1));
  return z.strictObject(Object.fromEntries(entries) as T);
}

/** A UUID (RFC 9562), as assigned by the service for every identifier. */
const Uuid = z.uuid();

/** ISO 8601 UTC timestamp with a `Z` suffix, e.g. `2026-01-15T12:00:00.000Z`. */
const Timestamp = z.iso.datetime();

/** Lowercase slug of an organization: letters, digits and inner hyphens, at most 63 characters. */
export const OrganizationSlugSchema = z
  .string()
  .max(63)
  .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, "must be a lowercase slug");

/**
 * `PR-YYYY-NNNNN` in its one canonical spelling (see `number.ts`): five or more sequence
 * digits, zero-padded to five, no extra leading zeros, sequence ≥ 1.
 */
export const ReceiptNumberSchema = z
  .string()
  .regex(/^PR-\d{4}-\d{5,}$/, "must have the form PR-YYYY-NNNNN")
  .refine((text) => parseReceiptNumber(text) !== null, "must be a canonical receipt number");

/** Lowercase hex SHA-256 without prefix. */
const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters");

/**
 * What happened when an allowed action was carried out, as reported back to the service
 * (POST .../events/{event_id}/outcome, POST /v1/outcomes); receipts carry it in canonical order.
 * Part of the wire contract too: src/contract/v1/wire.ts re-exports it.
 */
export const EventOutcomeSchema = z
  .object({
    status: z.enum(["success", "error"]),
    /** Class or kind of the error; null on success. */
    error_class: z.string().nullable(),
    /** Milliseconds the action took. */
    duration_ms: z.number().nonnegative(),
    /** Lowercase hex SHA-256 (no prefix) of the tool result; null when not reported. */
    result_sha256: Sha256Hex.nullable(),
  })
  .strict();
export type EventOutcome = z.infer<typeof EventOutcomeSchema>;

/**
 * Exception durations of the spec: 1 hour, 1 day, 1 week, 1 month (a calendar month, UTC).
 * Re-exported by src/contract/v1/wire.ts (the approval decision's `exception_duration`).
 */
export const ExceptionDurationSchema = z.enum(["1h", "1d", "1w", "1m"]);
export type ExceptionDuration = z.infer<typeof ExceptionDurationSchema>;

/** `sha256:<64 lowercase hex>`: a SHA-256 digest as receipts name it (receipt and event hashes). */
export const Sha256RefSchema = z
  .string()
  .regex(/^sha256:[0-9a-f]{64}$/, "must have the form sha256:<64 lowercase hex>");

/** `sha256:<64 lowercase hex>`: the receiptHash of a receipt (see `sign.ts`). */
export const ReceiptHashSchema = Sha256RefSchema;

/** Value of `event_chain.format`: the event hash chain rules of `event-chain.ts`. */
export const EVENT_CHAIN_FORMAT = "tollgate.event-chain.v1";

/** `hmac-sha256:<64 lowercase hex>`: the HMAC-SHA256 of the canonical receipt body. */
export const HmacSignatureSchema = z
  .string()
  .regex(/^hmac-sha256:[0-9a-f]{64}$/, "must have the form hmac-sha256:<64 lowercase hex>");

/** Unpadded base64url of a 64-byte Ed25519 signature (86 characters). */
export const Ed25519SignatureSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{85}[AQgw]$/, "must be the base64url form of a 64-byte Ed25519 signature");

/** Identifier of an Ed25519 key (ours: 16 lowercase hex, see `ed25519.ts`). */
export const KeyIdSchema = z.string().min(1).max(128);

/** Sums over the chain (spec: Receipt, cumulative_metrics fields). */
export const CumulativeMetricsSchema = signedObject({
  /** USD. */
  financial_exposure_usd: z.number(),
  external_communications_count: z.number().int().nonnegative(),
  records_modified_count: z.number().int().nonnegative(),
  /** Domain names. */
  external_domains_contacted: z.array(z.string()),
  /** USD. */
  estimated_cost_usd: z.number().nonnegative(),
});
export type CumulativeMetrics = z.infer<typeof CumulativeMetricsSchema>;

/** One human decision on a pending action (spec: Approval; receipt approvals). */
export const ReceiptApprovalSchema = signedObject({
  approval_id: Uuid,
  /** event_id of the action that required approval. */
  action_event_id: Uuid,
  agent_name: z.string(),
  action_type: z.string(),
  action_name: z.string(),
  /** cancelled: the chain was completed while the approval was still pending. */
  decision: z.enum(["approved", "denied", "timed_out", "cancelled"]),
  /** Who decided (an approver's email address); null for timed_out and cancelled. */
  decided_by: z.string().nullable(),
  /** Reviewer notes. */
  notes: z.string().nullable(),
  decided_at: Timestamp,
  /** The time-boxed exception created with the approval, if any. */
  exception: signedObject({
    exception_id: Uuid,
    duration: ExceptionDurationSchema,
    expires_at: Timestamp,
  }).nullable(),
});
export type ReceiptApproval = z.infer<typeof ReceiptApprovalSchema>;

/**
 * A verified workload identity as receipts and event records carry it (the service's
 * WorkloadIdentity; receipts stay independent of the policy module, so the shape is declared here).
 */
export const VerifiedPrincipalSchema = signedObject({
  namespace: z.string(),
  service_account: z.string(),
  pod_name: z.string().nullable(),
  pod_uid: z.string().nullable(),
  spiffe_id: z.string(),
});
export type VerifiedPrincipal = z.infer<typeof VerifiedPrincipalSchema>;

/** The facts of one recorded action that every events_summary item carries, in both formats. */
const receiptEventShape = {
  /** 1-based position of the event within the chain. */
  sequence: z.number().int().positive(),
  event_id: Uuid,
  agent_name: z.string(),
  parent_agent_name: z.string().nullable(),
  action_type: z.string(),
  action_name: z.string(),
  policy_decision: z.enum(["allow", "allow_with_flag", "require_approval", "deny"]),
  decision_source: z.enum(["backend_evaluation", "human_approval"]),
  policy_name: z.string().nullable(),
  /** The time-boxed exception that authorized this action, if any. */
  exception_id: Uuid.nullable(),
  recorded_at: Timestamp,
  /** null when the action was not carried out or no outcome was reported. */
  outcome: signedObject(EventOutcomeSchema.shape).nullable(),
  /**
   * The verified workload identity that recorded the action (namespace, service_account,
   * pod_name, pod_uid, spiffe_id; issue 27). Absent when the caller had none (API key, session)
   * and in receipts issued before identities were recorded.
   */
  principal: VerifiedPrincipalSchema.optional(),
};

/** One recorded action of the chain (spec: Events 1; receipt events_summary). */
export const ReceiptEventSchema = signedObject({
  ...receiptEventShape,
  /**
   * `sha256:<hex>` of the event's canonical record chained to the previous event's hash
   * (`event-chain.ts`): lets a verifier name the stored event that no longer matches.
   */
  event_hash: Sha256RefSchema,
});
export type ReceiptEvent = z.infer<typeof ReceiptEventSchema>;

const receiptBodyShape = {
  receipt_id: Uuid,
  receipt_number: ReceiptNumberSchema,
  chain_id: Uuid,
  organization: OrganizationSlugSchema,
  chain_name: z.string(),
  environment: z.string(),
  /** The chain's metadata, set once at creation: arbitrary JSON. */
  metadata: z.record(z.string(), z.json()),
  status: z.enum(["completed", "failed"]),
  /** Set when the chain context exited through an exception (status failed); else null. */
  failure: signedObject({ mode: z.string(), message: z.string() }).nullable(),
  summary: z.string(),
  started_at: Timestamp,
  completed_at: Timestamp,
  agents_involved: z.array(z.string()),
  total_actions: z.number().int().nonnegative(),
  cumulative_metrics: CumulativeMetricsSchema,
  approvals: z.array(ReceiptApprovalSchema),
  events_summary: z.array(ReceiptEventSchema),
  /**
   * The commitment to every recorded event of the chain (`event-chain.ts`): how many there are
   * and the hash of the last one, which chains all earlier ones (null when there are none).
   */
  event_chain: signedObject({
    format: z.literal(EVENT_CHAIN_FORMAT),
    event_count: z.number().int().nonnegative(),
    head_hash: Sha256RefSchema.nullable(),
  }),
  policy_version: z.string(),
  /** receiptHash of the organization's previous receipt; null only for its first (genesis). */
  previous_receipt_hash: ReceiptHashSchema.nullable(),
};

const signatureShape = {
  /** HMAC-SHA256 of the canonical body with the service's secret key (spec). */
  signature: HmacSignatureSchema,
  /** Ed25519 signature of the same canonical body; null when the service had no signing key. */
  ed25519: signedObject({ kid: KeyIdSchema, signature: Ed25519SignatureSchema }).nullable(),
};

/** The facts every receipt body is checked for, in both formats. */
type CommonFacts = {
  status: "completed" | "failed";
  failure: unknown;
  started_at: string;
  completed_at: string;
};

/** The facts a receipt that commits to its events is checked for besides the common ones. */
type BodyFacts = CommonFacts & {
  total_actions: number;
  events_summary: ReadonlyArray<{ sequence: number; event_hash: string }>;
  event_chain: { event_count: number; head_hash: string | null };
};

function checkCommonFacts(body: CommonFacts, ctx: z.RefinementCtx): void {
  if (body.status === "failed" && body.failure === null) {
    ctx.addIssue({ code: "custom", path: ["failure"], message: "a failed receipt must carry its failure" });
  }
  if (body.status === "completed" && body.failure !== null) {
    ctx.addIssue({ code: "custom", path: ["failure"], message: "a completed receipt carries no failure" });
  }
  if (Date.parse(body.completed_at) < Date.parse(body.started_at)) {
    ctx.addIssue({ code: "custom", path: ["completed_at"], message: "completed_at is before started_at" });
  }
}

function checkBodyFacts(body: BodyFacts, ctx: z.RefinementCtx): void {
  checkCommonFacts(body, ctx);
  const events = body.events_summary;
  if (body.event_chain.event_count !== events.length || body.total_actions !== events.length) {
    ctx.addIssue({
      code: "custom",
      path: ["event_chain", "event_count"],
      message: "event_count, total_actions and the number of summarized events differ",
    });
  }
  if (body.event_chain.head_hash !== (events.at(-1)?.event_hash ?? null)) {
    ctx.addIssue({
      code: "custom",
      path: ["event_chain", "head_hash"],
      message: "head_hash is not the event_hash of the last event",
    });
  }
  if (events.some((event, index) => event.sequence !== index + 1)) {
    ctx.addIssue({
      code: "custom",
      path: ["events_summary"],
      message: "event sequences must run 1, 2, 3, ...",
    });
  }
}

/**
 * The structured receipt data that is signed (spec: Receipt; "Signing and chaining rules" 1).
 * Also checks that `failure` is set exactly when status is failed, that completed_at is not
 * before started_at, and that the event commitment agrees with events_summary (event_count =
 * total_actions = number of items, sequences 1..n, head_hash = the last item's event_hash).
 */
export const ReceiptBodySchema = signedObject(receiptBodyShape).superRefine(checkBodyFacts);
export type ReceiptBody = z.infer<typeof ReceiptBodySchema>;

/** A receipt as stored, returned and exported: the body plus its signatures. */
export const SignedReceiptSchema = signedObject({ ...receiptBodyShape, ...signatureShape }).superRefine(
  checkBodyFacts,
);
export type SignedReceipt = z.infer<typeof SignedReceiptSchema>;

// ---------------------------------------------------------------------------------------------
// Receipts issued before the event hash chain (README "Receipts"; docs/adr/0007). They were
// signed and hash-chained under the same rules but carry no `event_chain` and no
// `events_summary[].event_hash`. They stay verifiable: signatures, links and numbering are
// checked exactly as before; their events and approvals, to which they never committed, are
// not evaluated. A receipt cannot be moved from one format to the other without breaking its
// signatures, which cover every key that is present (and absent).

/** One events_summary item of a pre-event-chain receipt: the current item without `event_hash`. */
export const PreEventChainReceiptEventSchema = signedObject(receiptEventShape);
export type PreEventChainReceiptEvent = z.infer<typeof PreEventChainReceiptEventSchema>;

const { event_chain: _eventChain, ...bodyShapeWithoutEventChain } = receiptBodyShape;
const preEventChainBodyShape = {
  ...bodyShapeWithoutEventChain,
  events_summary: z.array(PreEventChainReceiptEventSchema),
};

/**
 * The body of a receipt issued before the event hash chain, exactly as it was signed then
 * (strict: a receipt carrying `event_hash` items but no `event_chain`, or the reverse, matches
 * neither format). Checked for the facts that were checked then (failure set exactly when
 * failed; completed_at not before started_at).
 */
export const PreEventChainReceiptBodySchema =
  signedObject(preEventChainBodyShape).superRefine(checkCommonFacts);
export type PreEventChainReceiptBody = z.infer<typeof PreEventChainReceiptBodySchema>;

/** A pre-event-chain receipt as stored and exported: its body plus its signatures. */
export const PreEventChainSignedReceiptSchema = signedObject({
  ...preEventChainBodyShape,
  ...signatureShape,
}).superRefine(checkCommonFacts);
export type PreEventChainSignedReceipt = z.infer<typeof PreEventChainSignedReceiptSchema>;

/** A signed receipt of either format. */
export type AnySignedReceipt = SignedReceipt | PreEventChainSignedReceipt;
/** A receipt body of either format. */
export type AnyReceiptBody = ReceiptBody | PreEventChainReceiptBody;

/**
 * Which rules a receipt was issued under: `event_chain` (it commits to every recorded event
 * and its approvals: `event_chain`, `events_summary[].event_hash`) or `pre_event_chain`
 * (issued before that change: its events and approvals cannot be checked against it).
 */
export const ReceiptFormatSchema = z.enum(["event_chain", "pre_event_chain"]);
export type ReceiptFormat = z.infer<typeof ReceiptFormatSchema>;

/**
 * The format a receipt claims: pre_event_chain when it is an object without an `event_chain`
 * member, event_chain otherwise (also for non-objects, which match no schema). Says nothing
 * about validity: the receipt must then match that format's schema and its signatures.
 */
export function receiptFormatOf(receipt: unknown): ReceiptFormat {
  const isObject = typeof receipt === "object" && receipt !== null && !Array.isArray(receipt);
  return isObject && !Object.hasOwn(receipt, "event_chain") ? "pre_event_chain" : "event_chain";
}

/**
 * Validates a signed receipt against the schema of the format it claims (`receiptFormatOf`):
 * SignedReceiptSchema, or PreEventChainSignedReceiptSchema for a receipt without
 * `event_chain`. Never throws.
 */
export function safeParseSignedReceipt(receipt: unknown): {
  format: ReceiptFormat;
  result: z.ZodSafeParseResult<AnySignedReceipt>;
} {
  const format = receiptFormatOf(receipt);
  const schema = format === "event_chain" ? SignedReceiptSchema : PreEventChainSignedReceiptSchema;
  return { format, result: schema.safeParse(receipt) as z.ZodSafeParseResult<AnySignedReceipt> };
}

// ---------------------------------------------------------------------------------------------
// Verification results (spec: "Verification results"). Shapes beyond overall_status and
// integrity.status are ours.

/**
 * HMAC integrity of one receipt: valid or invalid when the key was available, not_evaluated
 * otherwise (the HMAC key never leaves the service).
 */
export const IntegrityStatusSchema = z.enum(["valid", "invalid", "not_evaluated"]);
export type IntegrityStatus = z.infer<typeof IntegrityStatusSchema>;

/**
 * Ed25519 signature of one receipt: valid; invalid (wrong or malformed signature); missing (the
 * receipt carries none); unknown_key (its kid is not among the trusted public keys: a failure,
 * since anyone can sign with a key of their own); not_evaluated (no public keys were given).
 */
export const Ed25519StatusSchema = z.enum(["valid", "invalid", "missing", "unknown_key", "not_evaluated"]);
export type Ed25519Status = z.infer<typeof Ed25519StatusSchema>;

/**
 * Link of one receipt to its predecessor: valid (previous_receipt_hash matches and the sequence
 * follows); genesis (sequence 1 with a null previous hash); broken (hash mismatch, a null hash
 * after genesis, a non-null hash on sequence 1, a sequence that goes backwards, or another
 * organization); gap (the sequence skips numbers: receipts were deleted or are missing).
 */
export const LinkStatusSchema = z.enum(["valid", "genesis", "broken", "gap"]);
export type LinkStatus = z.infer<typeof LinkStatusSchema>;

/** valid only when every check that could be evaluated passed. */
export const OverallStatusSchema = z.enum(["valid", "invalid"]);
export type OverallStatus = z.infer<typeof OverallStatusSchema>;

/** The link check of one receipt, with human-readable problems (empty when it passed). */
export const LinkCheckSchema = z.object({ status: LinkStatusSchema, problems: z.array(z.string()) });
export type LinkCheck = z.infer<typeof LinkCheckSchema>;

/**
 * Verification of one receipt within a chain. Problems name receipt numbers and never contain
 * signatures, HMACs or hashes, so they may be shown wherever the receipt number may be.
 */
export const ReceiptCheckSchema = z.object({
  receipt_id: z.string().nullable(),
  receipt_number: z.string().nullable(),
  /** Sequence parsed from receipt_number; null when the number is malformed. */
  sequence: z.number().int().nullable(),
  /** The format the receipt claims (`receiptFormatOf`); its schema decides well_formed. */
  receipt_format: ReceiptFormatSchema,
  /** False when the receipt does not match the schema of its format (`safeParseSignedReceipt`). */
  well_formed: z.boolean(),
  integrity: z.object({ status: IntegrityStatusSchema }),
  ed25519: z.object({ status: Ed25519StatusSchema, kid: z.string().nullable() }),
  chain: z.object({ status: LinkStatusSchema }),
  overall_status: OverallStatusSchema,
  problems: z.array(z.string()),
});
export type ReceiptCheck = z.infer<typeof ReceiptCheckSchema>;

/** Verification of an exported receipt chain of one organization. */
export const ChainVerificationSchema = z.object({
  /** valid only when every receipt is valid and no chain-level problem was found. */
  overall_status: OverallStatusSchema,
  /**
   * True when every receipt had at least one signature (HMAC or Ed25519 with a trusted key)
   * verified. When false, a valid result shows only that the chain is internally consistent:
   * the unkeyed hash chain alone can be recomputed by whoever rewrites it.
   */
  authenticated: z.boolean(),
  receipts: z.array(ReceiptCheckSchema),
  /** Every problem found, receipt problems first in chain order, then chain-level ones. */
  problems: z.array(z.string()),
});
export type ChainVerification = z.infer<typeof ChainVerificationSchema>;

/**
 * The distinct verified principals a receipt's signed events name (issue 27), in the order they
 * first acted; one entry per (SPIFFE ID, pod UID). Empty for receipts without identities and for
 * bodies that cannot be read.
 */
export function receiptPrincipals(receipt: unknown): VerifiedPrincipal[] {
  const events = (receipt as { events_summary?: unknown } | null)?.events_summary;
  if (!Array.isArray(events)) return [];
  const seen = new Map<string, VerifiedPrincipal>();
  for (const e of events) {
    const parsed = VerifiedPrincipalSchema.safeParse((e as { principal?: unknown } | null)?.principal);
    if (parsed.success) seen.set(`${parsed.data.spiffe_id} ${parsed.data.pod_uid}`, parsed.data);
  }
  return [...seen.values()];
}
