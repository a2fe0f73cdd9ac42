/**
 * Approval records and their Ed25519 attestations, checked against the receipt of their chain
 * (spec: "Verification results" for approvals; issue 18 §2; README "Event hash chain").
 *
 * When an approval is resolved the service signs the canonical JSON (RFC 8785) of an
 * `ApprovalAttestation` (the facts it recorded plus the key id) with its "approval" key. An
 * approval record (`ApprovalRecordSchema`) is those facts as they are stored NOW, with the
 * recorded kid and signature: the signature verifies only if nothing changed since. The
 * receipt's `approvals[]` lists the same facts under its own signatures, so a record is also
 * compared with the receipt's entry: an approval edited, deleted, inserted or reordered after
 * the receipt was issued is reported by approval id.
 *
 * Pure: no I/O, no clock. Verification never throws on malformed input; it reports it.
 */
import type { KeyObject } from "node:crypto";
import { z } from "zod";
import { canonicalJson } from "./canonical.js";
import { ed25519Verify } from "./ed25519.js";
import type { ReceiptApproval } from "./schema.js";

/** Value of the `format` member of every approval attestation payload. */
export const APPROVAL_ATTESTATION_FORMAT = "tollgate.approval-attestation.v1";

/** The attested facts of a resolved approval; the signed text is the canonical JSON of this object. */
export const ApprovalAttestationSchema = z
  .object({
    format: z.literal(APPROVAL_ATTESTATION_FORMAT),
    approval_id: z.uuid(),
    organization_id: z.uuid(),
    chain_id: z.uuid(),
    /** The event that required approval. */
    event_id: z.uuid(),
    /** pending | approved | denied | timed_out | cancelled. */
    status: z.string(),
    /** The final decision (null while pending). */
    policy_decision: z.string().nullable(),
    decision_source: z.string().nullable(),
    decided_by: z.string().nullable(),
    notes: z.string().nullable(),
    /** ISO 8601 UTC. */
    requested_at: z.string(),
    decided_at: z.string().nullable(),
    exception: z
      .object({
        exception_id: z.string(),
        duration: z.string().nullable(),
        expires_at: z.string().nullable(),
      })
      .strict()
      .nullable(),
    /** Binds the key: a changed key id no longer matches the signed text. */
    kid: z.string(),
  })
  .strict();
export type ApprovalAttestation = z.infer<typeof ApprovalAttestationSchema>;

/**
 * The text an approval attestation signs: canonical JSON of the attestation.
 * @throws TypeError when it holds non-JSON values.
 */
export function approvalAttestationText(attestation: ApprovalAttestation): string {
  return canonicalJson(attestation);
}

/**
 * An approval as a receipt export carries it: the attested facts as currently stored (without
 * `format`), the recorded key id and the base64url Ed25519 signature; kid and signature are null
 * when the resolution was never signed.
 */
export const ApprovalRecordSchema = ApprovalAttestationSchema.omit({ format: true, kid: true })
  .extend({ kid: z.string().nullable(), signature: z.string().nullable() })
  .strict();
export type ApprovalRecord = z.infer<typeof ApprovalRecordSchema>;

/** The attestation a record's signature must cover; null when the record carries no kid. */
export function attestationOfRecord(record: ApprovalRecord): ApprovalAttestation | null {
  const { kid, signature: _signature, ...facts } = record;
  return kid === null ? null : { format: APPROVAL_ATTESTATION_FORMAT, ...facts, kid };
}

/**
 * What became of one approval: altered (its facts differ from the receipt's entry), missing (in
 * the receipt, not among the records: deleted), unexpected (a record the receipt does not list:
 * inserted), out_of_order (records not in the receipt's order), unsigned (no signature),
 * invalid_signature (the signature does not cover the current facts: edited), unknown_key (the
 * kid is not among the trusted approval keys), revoked_key (signed by a key revoked before its
 * decision: refused, key-validity.ts), malformed (not an approval record).
 */
export const ApprovalMismatchKind = {
  altered: "altered",
  missing: "missing",
  unexpected: "unexpected",
  out_of_order: "out_of_order",
  unsigned: "unsigned",
  invalid_signature: "invalid_signature",
  unknown_key: "unknown_key",
  revoked_key: "revoked_key",
  malformed: "malformed",
} as const;
export type ApprovalMismatchKind = (typeof ApprovalMismatchKind)[keyof typeof ApprovalMismatchKind];

/** One approval that does not match. */
export interface ApprovalMismatch {
  kind: ApprovalMismatchKind;
  approval_id: string | null;
}

/** Result of checking the approval records of one chain against its receipt. */
export interface ApprovalRecordsCheck {
  /** valid only when every record is signed, verifies, and matches the receipt one to one, in order. */
  status: "valid" | "invalid";
  approval_count: number;
  mismatches: ApprovalMismatch[];
  /** Human-readable problems naming the receipt and the approval id; never signatures. */
  problems: string[];
}

/**
 * Checks the approval records of one chain (in their given order) against the receipt's
 * `approvals[]` and, with `keys` (kid → Ed25519 public key of the "approval" purpose), each
 * record's signature. Without `keys` signatures are not evaluated (the comparison with the
 * receipt still is). `label` names the receipt in problems.
 *
 * Compared with the receipt entry: event id (action_event_id), status (decision), decided_by,
 * notes, decided_at and the exception (id, duration, expiry); also the chain id.
 *
 * Never throws.
 */
export function verifyApprovalRecords(
  receipt: { chain_id: string; approvals: readonly ReceiptApproval[] },
  records: readonly unknown[],
  keys: ReadonlyMap<string, KeyObject> | null,
  label: string,
): ApprovalRecordsCheck {
  const mismatches: ApprovalMismatch[] = [];
  const problems: string[] = [];
  const add = (kind: ApprovalMismatchKind, id: string | null, text: string) => {
    mismatches.push({ kind, approval_id: id });
    problems.push(text);
  };
  const entries = Array.isArray(receipt.approvals) ? receipt.approvals : [];
  const order = new Map(entries.map((e, i) => [e?.approval_id, i]));
  const seen = new Set<string>();
  let lastIndex = -1;

  records.forEach((item, index) => {
    const parsed = ApprovalRecordSchema.safeParse(item);
    if (!parsed.success) {
      const id = (item as { approval_id?: unknown } | null)?.approval_id;
      add(
        "malformed",
        typeof id === "string" ? id : null,
        `approval item ${index + 1} of ${label} is not an approval record`,
      );
      return;
    }
    const record = parsed.data;
    const name = `approval ${record.approval_id} of ${label}`;
    if (record.chain_id !== receipt.chain_id) {
      add("unexpected", record.approval_id, `${name} belongs to another chain`);
      return;
    }
    if (seen.has(record.approval_id)) {
      add("unexpected", record.approval_id, `${name} is listed twice`);
      return;
    }
    seen.add(record.approval_id);

    const signature = signatureStatus(record, keys);
    if (signature === "unsigned") add("unsigned", record.approval_id, `${name} carries no signature`);
    if (signature === "unknown_key")
      add("unknown_key", record.approval_id, `${name} is signed with an untrusted key`);
    if (signature === "invalid")
      add(
        "invalid_signature",
        record.approval_id,
        `${name} was altered: its signature does not match its recorded facts`,
      );

    const position = order.get(record.approval_id);
    const entry = position === undefined ? undefined : entries[position];
    if (entry === undefined) {
      add("unexpected", record.approval_id, `${name} is not in the receipt: it was inserted`);
      return;
    }
    const differs = differingFields(record, entry);
    if (differs.length > 0) {
      add(
        "altered",
        record.approval_id,
        `${name} differs from the receipt (${differs.join(", ")}): it was altered after the receipt was issued`,
      );
    }
    if (position! < lastIndex) {
      add(
        "out_of_order",
        record.approval_id,
        `${name} is out of the receipt's order: approvals were reordered`,
      );
    }
    lastIndex = Math.max(lastIndex, position!);
  });
  for (const entry of entries) {
    if (entry && !seen.has(entry.approval_id)) {
      add(
        "missing",
        entry.approval_id,
        `approval ${entry.approval_id} of ${label} is missing: it was deleted`,
      );
    }
  }
  return {
    status: problems.length === 0 ? "valid" : "invalid",
    approval_count: records.length,
    mismatches,
    problems,
  };
}

type SignatureStatus = "valid" | "invalid" | "unsigned" | "unknown_key" | "not_evaluated";

function signatureStatus(
  record: ApprovalRecord,
  keys: ReadonlyMap<string, KeyObject> | null,
): SignatureStatus {
  const attestation = attestationOfRecord(record);
  if (attestation === null || record.signature === null) return "unsigned";
  if (keys === null) return "not_evaluated";
  const key = keys.get(attestation.kid);
  if (!key) return "unknown_key";
  let text: string;
  try {
    text = approvalAttestationText(attestation);
  } catch {
    return "invalid";
  }
  return ed25519Verify(text, record.signature, key) ? "valid" : "invalid";
}

/** Names of the facts on which a record and the receipt's entry differ. */
function differingFields(record: ApprovalRecord, entry: ReceiptApproval): string[] {
  const fields: string[] = [];
  if (record.event_id !== entry.action_event_id) fields.push("event");
  if (record.status !== entry.decision) fields.push("decision");
  if (record.decided_by !== entry.decided_by) fields.push("decided_by");
  if (record.notes !== entry.notes) fields.push("notes");
  if (record.decided_at !== entry.decided_at) fields.push("decided_at");
  const a = record.exception;
  const b = entry.exception;
  if (
    (a === null) !== (b === null) ||
    (a !== null &&
      b !== null &&
      (a.exception_id !== b.exception_id || a.duration !== b.duration || a.expires_at !== b.expires_at))
  ) {
    fields.push("exception");
  }
  return fields;
}
