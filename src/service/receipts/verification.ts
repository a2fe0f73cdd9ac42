/**
 * Verification v2 (spec: "Verification results", "Versioning"): server-attested verification of
 * stored receipts and approvals, and the minimized and legacy views derived from it.
 *
 * Receipts: integrity = the HMAC over the stored canonical receipt recomputed with the service's
 * key, plus the stored row agreeing with its body (receipt id, number, sequence, organization,
 * chain, and the stored receipt_hash column); chain = the link to the organization's previous
 * stored receipt (predecessor present, its hash matches, sequence unbroken); signature = the
 * receipt's Ed25519 attestation against the service's receipt keys; events = the chain's stored
 * events recomputed into the event hash chain the receipt committed to (src/receipts/
 * event-chain.ts); approvals = the chain's stored approvals against the receipt's approvals
 * and their own Ed25519 attestations (src/receipts/approval-record.ts). A receipt issued before
 * the event hash chain (no `event_chain`) gets the same integrity, link and signature checks;
 * its events and approvals, to which it never committed, are not_evaluated, which does not
 * make it invalid (src/receipts/evidence.ts).
 *
 * Checkpoints: the signature of a checkpoint the caller kept, and whether the stored log still
 * extends it (src/receipts/checkpoint.ts): tail truncation shows here.
 *
 * Approvals: integrity = the signed payload equals the payload recomputed from the row's current
 * columns; signature = Ed25519 over the recomputed payload with the recorded key; key_status per
 * the rule of {@link keyStatusOf}; external anchors are not configured and never override local
 * results.
 *
 * Results never carry raw bodies, HMACs, signatures or hashes; problem texts name receipt
 * numbers only.
 */
import {
  AnchorStatus,
  type ApprovalAuditContext,
  type ApprovalsView,
  type ApprovalVerification,
  type CheckpointVerification,
  type EventsView,
  KeyStatus,
  type LegacyReceiptVerification,
  type PublicVerificationResult,
  type ReceiptVerification,
  type SignatureStatus,
  type SignatureView,
} from "../../contract/v1/verification.js";
import { hasSensitivePrefix } from "../../policy/sanitize.js";
import {
  type Checkpoint,
  checkpointLogStatus,
  verifyCheckpointSignature,
} from "../../receipts/checkpoint.js";
import { ed25519Verify } from "../../receipts/ed25519.js";
import {
  type ApprovalsEvidence,
  type EventsEvidence,
  evidencePasses,
  type ReceiptEvidenceCheck,
  verifyReceiptEvidence,
} from "../../receipts/evidence.js";
import { revocationOf, revokedProblem } from "../../receipts/key-validity.js";
import { parseReceiptNumber } from "../../receipts/number.js";
import type { AnySignedReceipt, IntegrityStatus, LinkStatus, ReceiptFormat } from "../../receipts/schema.js";
import { receiptPrincipals } from "../../receipts/schema.js";
import { receiptHash } from "../../receipts/sign.js";
import { verifyReceipt } from "../../receipts/verify.js";
import { type AttestedApprovalRow, approvalAttestationPayload } from "../approvals/attestation.js";
import type { Queryable } from "../db/pool.js";
import { ApiError, notFound } from "../errors.js";
import { orgSlug } from "../orgs/orgs.js";
import { findApprovalRow, loadApprovalRecords, loadEventRecords } from "./evidence.js";
import { MASTER_HMAC_KID, type ReceiptHmacKeys } from "./hmac-keys.js";
import { loadPublicKeys, type StoredKey } from "./signing-keys.js";
import { findReceiptRow, newestReceipt, predecessorOf, receiptAt } from "./store.js";

/**
 * Key-trust rule (spec: "historical approval signing keys report not_evaluated"; ADR 0010): the
 * active key of the purpose is trusted; a key retired by rotation is not_evaluated; a revoked
 * key is revoked for what it signed at or after its revocation time (refused) and
 * signed_before_revocation for what it signed earlier; a kid the service never created for that
 * purpose is unknown. `signedAt`: when the artifact was signed (src/receipts/key-validity.ts).
 */
export function keyStatusOf(key: StoredKey | undefined, signedAt: unknown): KeyStatus {
  if (!key) return KeyStatus.unknown;
  const revocation = revocationOf(key.revokedAtMs, signedAt);
  if (revocation !== "not_revoked") return revocation;
  return key.retiredAtMs !== null ? KeyStatus.not_evaluated : KeyStatus.trusted;
}

/** The problem of a signature refused by {@link keyStatusOf}, or null. */
function refusedProblem(what: string, kid: string, key: StoredKey | undefined, signedAt: unknown) {
  return key && keyStatusOf(key, signedAt) === KeyStatus.revoked
    ? revokedProblem(what, kid, key.revokedAtMs!)
    : null;
}

const anchors = () => ({
  timestamp_authority_anchor: { status: AnchorStatus.not_configured },
  blockchain_anchor: { status: AnchorStatus.not_configured },
});

function parseBody(text: string): AnySignedReceipt | null {
  try {
    const value = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/**
 * Server-attested verification of one stored receipt of an organization: integrity, link,
 * Ed25519 signature, and whether its chain's stored events and approvals still match it
 * (`events`, `approvals`; issue 18 §2). overall_status is valid only when all of them are, a
 * pre-event-chain receipt's not_evaluated events and approvals excepted (`evidencePasses`).
 * @throws ApiError 404 when the receipt does not exist in the organization.
 */
export async function verifyStoredReceipt(
  q: Queryable,
  opts: { orgId: string; receiptId: string; hmacKeys: ReceiptHmacKeys; nowMs: number },
): Promise<ReceiptVerification> {
  const row = await findReceiptRow(q, opts.orgId, opts.receiptId);
  if (!row) throw notFound("Receipt");
  const sequence = Number(row.sequence);
  const slug = (await orgSlug(q, opts.orgId)) as string;
  const predRow = await predecessorOf(q, opts.orgId, sequence);
  const keys = await loadPublicKeys(q, "receipt");
  const name = row.receipt_number;
  const base = {
    artifact_type: "receipt" as const,
    receipt_id: row.id,
    receipt_number: row.receipt_number,
    chain_id: row.chain_id,
    sequence,
  };
  const receipt = parseBody(row.body);
  if (!receipt) {
    return {
      ...base,
      receipt_format: null,
      overall_status: "invalid",
      integrity: { status: "invalid" },
      chain: { status: "broken", predecessor_receipt_number: predRow?.receipt_number ?? null },
      signature: { status: "invalid", algorithm: "Ed25519", kid: null, key_status: KeyStatus.not_applicable },
      events: { status: "not_evaluated", event_count: 0, mismatched_sequences: [] },
      approvals: { status: "not_evaluated", approval_count: 0, mismatched_approval_ids: [] },
      principals: [],
      ...anchors(),
      problems: [`the stored body of ${name} cannot be read`],
      verified_at: new Date(opts.nowMs).toISOString(),
    };
  }

  const problems: string[] = [];
  let predecessor: AnySignedReceipt | null = null;
  let predecessorUnreadable = false;
  if (predRow) {
    predecessor = parseBody(predRow.body);
    predecessorUnreadable = predecessor === null;
  }
  const publicKeys = new Map([...keys].map(([kid, k]) => [kid, k.publicKey]));
  // The HMAC key the row names (null: the derived key every receipt had before rotation).
  const hmacKid = row.hmac_kid ?? MASTER_HMAC_KID;
  const hmacKey = (await opts.hmacKeys.all(q, opts.orgId)).get(hmacKid);
  const check = verifyReceipt(receipt, predecessor, {
    hmacKey: hmacKey?.key,
    publicKeys,
    requireEd25519: true,
  });
  problems.push(...check.problems);
  let hmacRefused = hmacKey === undefined;
  if (!hmacKey) problems.push(`${name} names a receipt HMAC key the service has no record of`);
  else if (revocationOf(hmacKey.revokedAtMs, row.created_at) === "revoked") {
    hmacRefused = true;
    problems.push(revokedProblem(`the HMAC of ${name}`, hmacKid, hmacKey.revokedAtMs!));
  }

  // The row must agree with its body: a swapped or moved body is not this receipt.
  const mismatched: string[] = [];
  if (receipt.receipt_id !== row.id) mismatched.push("receipt id");
  if (receipt.receipt_number !== row.receipt_number) mismatched.push("receipt number");
  if (parseReceiptNumber(String(receipt.receipt_number))?.sequence !== sequence) mismatched.push("sequence");
  if (receipt.organization !== slug) mismatched.push("organization");
  if (receipt.chain_id !== row.chain_id) mismatched.push("chain");
  if (mismatched.length > 0)
    problems.push(`the stored record of ${name} does not match its body (${mismatched.join(", ")})`);
  let storedHashMatches = false;
  try {
    storedHashMatches = receiptHash(receipt) === row.receipt_hash;
  } catch {
    storedHashMatches = false;
  }
  if (!storedHashMatches) problems.push(`the stored hash of ${name} does not match its body`);

  let chainStatus: LinkStatus = check.chain.status;
  if (predecessorUnreadable) {
    chainStatus = "broken";
    problems.push(
      `the stored body of ${predRow!.receipt_number}, the predecessor of ${name}, cannot be read`,
    );
  }
  const integrityValid =
    check.integrity.status === "valid" &&
    !hmacRefused &&
    check.well_formed &&
    mismatched.length === 0 &&
    storedHashMatches;
  const ed = check.ed25519;
  const signature: SignatureView = {
    status: ed.status === "not_evaluated" ? "unknown_key" : ed.status,
    algorithm: "Ed25519",
    kid: ed.kid,
    key_status: ed.kid === null ? KeyStatus.not_applicable : keyStatusOf(keys.get(ed.kid), row.created_at),
  };
  const refused = ed.kid && refusedProblem(name, ed.kid, keys.get(ed.kid), row.created_at);
  if (refused) problems.push(refused);
  const evidence = await checkEvidence(q, row.chain_id, receipt, name);
  problems.push(...evidence.events.problems, ...evidence.approvals.problems);
  const valid =
    integrityValid &&
    (chainStatus === "valid" || chainStatus === "genesis") &&
    signature.status === "valid" &&
    signature.key_status !== KeyStatus.revoked &&
    evidencePasses(evidence);
  return {
    ...base,
    receipt_format: evidence.receipt_format,
    overall_status: valid ? "valid" : "invalid",
    integrity: { status: integrityValid ? "valid" : "invalid" },
    chain: { status: chainStatus, predecessor_receipt_number: predRow?.receipt_number ?? null },
    signature,
    events: eventsView(evidence.events),
    approvals: approvalsView(evidence.approvals),
    principals: receiptPrincipals(receipt),
    ...anchors(),
    problems: [...new Set(problems)],
    verified_at: new Date(opts.nowMs).toISOString(),
  };
}

/**
 * The chain's stored events and approvals checked against its receipt (the receipt's own
 * signatures are checked by the caller): the events recomputed into the event hash chain, the
 * approvals compared with the receipt and verified against every approval key the service has;
 * both not_evaluated for a pre-event-chain receipt (src/receipts/evidence.ts).
 */
async function checkEvidence(
  q: Queryable,
  chainId: string,
  receipt: AnySignedReceipt,
  name: string,
): Promise<ReceiptEvidenceCheck> {
  const events = (await loadEventRecords(q, [chainId])).get(chainId) ?? [];
  const approvals = (await loadApprovalRecords(q, [chainId])).get(chainId) ?? [];
  const keys = await loadPublicKeys(q, "approval");
  const approvalKeys = new Map([...keys].map(([kid, k]) => [kid, k.publicKey]));
  const revocations = new Map(
    [...keys].flatMap(([kid, k]) => (k.revokedAtMs === null ? [] : [[kid, k.revokedAtMs] as const])),
  );
  return verifyReceiptEvidence(receipt, { events, approvals }, approvalKeys, name, revocations);
}

function eventsView(check: EventsEvidence): EventsView {
  const sequences = check.mismatches.map((m) => m.sequence).filter((s): s is number => s !== null);
  return {
    status: check.status,
    event_count: check.event_count,
    mismatched_sequences: [...new Set(sequences)].sort((a, b) => a - b),
  };
}

function approvalsView(check: ApprovalsEvidence): ApprovalsView {
  const ids = check.mismatches.map((m) => m.approval_id).filter((id): id is string => id !== null);
  return {
    status: check.status,
    approval_count: check.approval_count,
    mismatched_approval_ids: [...new Set(ids)],
  };
}

/**
 * What GET /v1/chains/{chain_id} and the dashboard chain page say about a chain's evidence:
 * `status` is the v2 overall_status of its receipt (so valid means the receipt verifies AND the
 * stored events and approvals match it, or, for a pre-event-chain receipt, are not_evaluated),
 * no_receipt before completion, invalid when the receipt the chain names is gone.
 */
export type ChainEvidence = {
  status: "valid" | "invalid" | "no_receipt";
  receipt_id: string | null;
  receipt_number: string | null;
  /** As in ReceiptVerification; null without a readable receipt. */
  receipt_format: ReceiptFormat | null;
  events: EventsView | null;
  approvals: ApprovalsView | null;
  problems: string[];
};

/** The evidence view of a chain whose receipt is `receiptId` (null: not completed); see ChainEvidence. */
export async function chainEvidence(
  q: Queryable,
  opts: { orgId: string; receiptId: string | null; hmacKeys: ReceiptHmacKeys; nowMs: number },
): Promise<ChainEvidence> {
  if (opts.receiptId === null) {
    return {
      status: "no_receipt",
      receipt_id: null,
      receipt_number: null,
      receipt_format: null,
      events: null,
      approvals: null,
      problems: [],
    };
  }
  try {
    const v = await verifyStoredReceipt(q, {
      orgId: opts.orgId,
      receiptId: opts.receiptId,
      hmacKeys: opts.hmacKeys,
      nowMs: opts.nowMs,
    });
    return evidenceOf(v);
  } catch (err) {
    if (!(err instanceof ApiError && err.statusCode === 404)) throw err;
    return {
      status: "invalid",
      receipt_id: opts.receiptId,
      receipt_number: null,
      receipt_format: null,
      events: null,
      approvals: null,
      problems: ["the chain's receipt is missing: it was deleted"],
    };
  }
}

/** The chain evidence view of a receipt verification. */
export function evidenceOf(v: ReceiptVerification): ChainEvidence {
  return {
    status: v.overall_status,
    receipt_id: v.receipt_id,
    receipt_number: v.receipt_number,
    receipt_format: v.receipt_format,
    events: v.events,
    approvals: v.approvals,
    problems: v.problems,
  };
}

/**
 * Verifies a checkpoint the caller kept against the organization's stored receipt log: its
 * Ed25519 signature by a receipt key, and whether the log still extends it (the receipt at its
 * sequence exists and its recomputed receiptHash is the checkpoint's).
 * @throws ApiError 404 when the checkpoint names another organization (never says anything
 *   about another organization's log).
 */
export async function verifyCheckpoint(
  q: Queryable,
  opts: { orgId: string; checkpoint: Checkpoint; nowMs: number },
): Promise<CheckpointVerification> {
  const cp = opts.checkpoint;
  const slug = await orgSlug(q, opts.orgId);
  if (slug !== cp.organization) throw notFound("Checkpoint");
  const keys = await loadPublicKeys(q, "receipt");
  const signature = verifyCheckpointSignature(cp, new Map([...keys].map(([kid, k]) => [kid, k.publicKey])));
  const latestSequence = Number((await newestReceipt(q, opts.orgId))?.sequence ?? 0);
  const stored = await receiptAt(q, opts.orgId, cp.sequence);
  let hash: string | null = null;
  if (stored) {
    const body = parseBody(stored.body);
    try {
      hash = body ? receiptHash(body) : "unreadable";
    } catch {
      hash = "unreadable";
    }
  }
  const log = checkpointLogStatus(cp, {
    organization: slug,
    latestSequence,
    hashAt: (sequence) => (sequence === cp.sequence ? hash : undefined),
  });
  const problems = [...log.problems];
  if (signature === "invalid")
    problems.push("the checkpoint's Ed25519 signature does not match its contents");
  if (signature === "unknown_key")
    problems.push("the checkpoint is signed with a key the service has no record of");
  const keyStatus = keyStatusOf(keys.get(cp.kid), cp.issued_at);
  const refused = refusedProblem("the checkpoint", cp.kid, keys.get(cp.kid), cp.issued_at);
  if (refused) problems.push(refused);
  return {
    artifact_type: "checkpoint",
    organization: cp.organization,
    sequence: cp.sequence,
    receipt_number: cp.receipt_number,
    overall_status:
      signature === "valid" && keyStatus !== KeyStatus.revoked && log.status === "extended"
        ? "valid"
        : "invalid",
    signature: {
      status: signature,
      algorithm: "Ed25519",
      kid: cp.kid,
      key_status: keyStatus,
    },
    log: { status: log.status, latest_sequence: latestSequence },
    problems,
    verified_at: new Date(opts.nowMs).toISOString(),
  };
}

/**
 * Verification of one approval of an organization; `role` admin adds the audit context.
 * @throws ApiError 404 when the approval does not exist in the organization.
 */
export async function verifyStoredApproval(
  q: Queryable,
  opts: { orgId: string; approvalId: string; role: "member" | "admin"; nowMs: number },
): Promise<ApprovalVerification> {
  const row = await findApprovalRow(q, opts.orgId, opts.approvalId);
  if (!row) throw notFound("Approval");
  const result = await checkApproval(q, row, opts.nowMs);
  return opts.role === "admin" ? { ...result, audit_context: auditContext(row) } : result;
}

async function checkApproval(
  q: Queryable,
  row: AttestedApprovalRow,
  nowMs: number,
): Promise<ApprovalVerification> {
  const base = {
    artifact_type: "approval" as const,
    approval_id: row.id,
    chain_id: row.chain_id,
    status: row.status,
    requested_at: new Date(row.requested_at).toISOString(),
    decided_at: row.decided_at ? new Date(row.decided_at).toISOString() : null,
    ...anchors(),
    verified_at: new Date(nowMs).toISOString(),
  };
  if (row.status === "pending") {
    return {
      ...base,
      overall_status: "pending",
      integrity: { status: "not_evaluated" },
      signature: { status: "not_applicable", algorithm: "Ed25519", kid: null, key_status: "not_applicable" },
      problems: [],
    };
  }
  if (row.signature === null || row.signed_payload === null || row.signing_kid === null) {
    return {
      ...base,
      overall_status: "unsigned",
      integrity: { status: "not_evaluated" },
      signature: {
        status: "missing",
        algorithm: "Ed25519",
        kid: row.signing_kid,
        key_status: "not_applicable",
      },
      problems: ["the approval's resolution carries no signature"],
    };
  }
  const problems: string[] = [];
  const recomputed = approvalAttestationPayload(row, row.signing_kid);
  const integrity: IntegrityStatus = recomputed === row.signed_payload ? "valid" : "invalid";
  if (integrity === "invalid")
    problems.push("the approval's recorded facts differ from the facts that were signed");
  const keys = await loadPublicKeys(q, "approval");
  const key = keys.get(row.signing_kid);
  let status: SignatureStatus;
  if (!key) {
    status = "unknown_key";
    problems.push("the approval is signed with a key the service has no record of");
  } else {
    status = ed25519Verify(recomputed, row.signature, key.publicKey) ? "valid" : "invalid";
    if (status === "invalid")
      problems.push("the approval's Ed25519 signature does not match its recorded facts");
  }
  const signedAt = row.decided_at ?? row.requested_at;
  const keyStatus = keyStatusOf(key, signedAt);
  const refused = refusedProblem("the approval", row.signing_kid, key, signedAt);
  if (refused) problems.push(refused);
  return {
    ...base,
    overall_status:
      integrity === "valid" && status === "valid" && keyStatus !== KeyStatus.revoked ? "valid" : "invalid",
    integrity: { status: integrity },
    signature: { status, algorithm: "Ed25519", kid: row.signing_kid, key_status: keyStatus },
    problems,
  };
}

const REVIEW_NOTES_MAX = 280;

/**
 * Sanitizes reviewer notes for the admin review summary: control characters become spaces,
 * whitespace collapses, words that look like secrets (known secret prefixes, or 32+ characters
 * of base64/hex alphabet) become [REDACTED], e-mail addresses become [email], and the result is
 * cut to 280 characters. Null or blank notes give null.
 */
export function sanitizeReviewNotes(notes: string | null): string | null {
  if (notes === null) return null;
  const words = notes
    // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters is the point
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, " ")
    .split(/\s+/)
    .filter(Boolean)
    .map((w) => {
      if (hasSensitivePrefix(w) || /[A-Za-z0-9+/_=-]{32,}/.test(w)) return "[REDACTED]";
      return w.replace(/[^\s@]+@[^\s@]+\.[^\s@]+/g, "[email]");
    });
  const text = words.join(" ");
  if (!text) return null;
  return text.length > REVIEW_NOTES_MAX ? `${text.slice(0, REVIEW_NOTES_MAX - 1)}…` : text;
}

function auditContext(row: AttestedApprovalRow): ApprovalAuditContext {
  const exception = row.exception_id
    ? {
        duration: row.exception_duration,
        expires_at: row.exception_expires_at ? new Date(row.exception_expires_at).toISOString() : null,
      }
    : null;
  const sentence: Record<string, string> = {
    pending: "Waiting for a decision.",
    approved: exception ? `Approved with a ${exception.duration} time-boxed exception.` : "Approved.",
    denied: "Denied.",
    timed_out: "Not resolved within the approval timeout.",
    cancelled: "Cancelled: the chain completed before a decision.",
  };
  const notes = sanitizeReviewNotes(row.notes);
  return {
    decided_by: row.decided_by,
    decision: row.status,
    exception,
    review_summary: `${sentence[row.status] ?? row.status}${notes ? ` Notes: ${notes}` : ""}`,
  };
}

/** The minimized public view of a verification result (spec: public verification). */
export function minimizeVerification(
  v: ReceiptVerification | ApprovalVerification,
): PublicVerificationResult {
  return {
    artifact_type: v.artifact_type,
    verification_status: v.overall_status,
    integrity_status: v.integrity.status,
    signature_status: v.signature.status,
    key_status: v.signature.key_status,
    timestamp_anchor_status: v.timestamp_authority_anchor.status,
    verified_at: v.verified_at,
  };
}

/** The legacy view of a receipt verification (GET /v1/receipts/{receipt_id}/verify). */
export function legacyReceiptView(v: ReceiptVerification): LegacyReceiptVerification {
  return {
    receipt_id: v.receipt_id,
    receipt_number: v.receipt_number,
    valid: v.overall_status === "valid",
    signature_valid: v.integrity.status === "valid",
    chain_valid: v.chain.status === "valid" || v.chain.status === "genesis",
    verified_at: v.verified_at,
  };
}
