/**
 * The evidence of one receipt: its chain's recorded events and approval records checked against
 * what the receipt committed to (README "Event hash chain", "Verification"; docs/adr/0007).
 * One rule for the service's v2 verification and for `tollgate verify`:
 *
 * - a receipt that commits to its events (`event_chain` format): the events are recomputed into
 *   its event hash chain (`verifyEventChain`) and the approval records are compared with its
 *   `approvals[]` and checked against their Ed25519 attestations (`verifyApprovalRecords`);
 *   each is valid or invalid;
 * - a receipt issued before the event hash chain (`pre_event_chain`: no `event_chain`, no
 *   `events_summary[].event_hash`): it committed to neither, so both are `not_evaluated`, which
 *   is not a failure (`evidencePasses`). Its own signatures, link and number are still checked
 *   (verify.ts), and they cover the absence of `event_chain`: a receipt stripped of it to look
 *   old no longer verifies.
 *
 * Pure: no I/O, no clock. Never throws.
 */
import type { KeyObject } from "node:crypto";
import { ApprovalMismatchKind, type ApprovalRecordsCheck, verifyApprovalRecords } from "./approval-record.js";
import { type EventChainCheck, type EventCommitments, verifyEventChain } from "./event-chain.js";
import { revocationOf, revokedProblem } from "./key-validity.js";
import { type ReceiptApproval, type ReceiptFormat, receiptFormatOf } from "./schema.js";

/**
 * valid (everything the receipt committed to matches), invalid (something was altered,
 * deleted, inserted or reordered: named in problems), not_evaluated (the receipt committed to
 * nothing that could be checked: a pre-event-chain receipt, or one that cannot be read).
 */
export type EvidenceStatus = "valid" | "invalid" | "not_evaluated";

/** The events of a receipt's chain against it: `EventChainCheck` with a not_evaluated status. */
export type EventsEvidence = Omit<EventChainCheck, "status"> & { status: EvidenceStatus };

/** The approval records of a receipt's chain against it: `ApprovalRecordsCheck` with not_evaluated. */
export type ApprovalsEvidence = Omit<ApprovalRecordsCheck, "status"> & { status: EvidenceStatus };

/** Result of `verifyReceiptEvidence`. */
export interface ReceiptEvidenceCheck {
  /** The format the receipt claims (schema.ts `receiptFormatOf`). */
  receipt_format: ReceiptFormat;
  events: EventsEvidence;
  approvals: ApprovalsEvidence;
}

/**
 * Checks the recorded events (stored rows, or an export's items, in sequence order) and the
 * approval records (in the receipt's order) of one receipt's chain against the receipt.
 * `approvalKeys` are the trusted "approval" Ed25519 keys (kid → key); null leaves approval
 * signatures unevaluated. `label` names the receipt in problems (its receipt number).
 *
 * `approvalRevocations` (kid → revocation time in ms, key-validity.ts): a record signed by a
 * revoked key at or after its revocation (its decided_at, else requested_at) is refused
 * (mismatch revoked_key), so the approvals are invalid.
 *
 * For a pre-event-chain receipt nothing is compared: both results are not_evaluated with no
 * problems, and the counts say how many records there are.
 */
export function verifyReceiptEvidence(
  receipt: unknown,
  records: { events: readonly unknown[]; approvals: readonly unknown[] },
  approvalKeys: ReadonlyMap<string, KeyObject> | null,
  label: string,
  approvalRevocations: ReadonlyMap<string, number> = new Map(),
): ReceiptEvidenceCheck {
  const format = receiptFormatOf(receipt);
  if (format === "pre_event_chain") {
    return {
      receipt_format: format,
      events: { status: "not_evaluated", event_count: records.events.length, mismatches: [], problems: [] },
      approvals: {
        status: "not_evaluated",
        approval_count: records.approvals.length,
        mismatches: [],
        problems: [],
      },
    };
  }
  const object = (isObject(receipt) ? receipt : {}) as Partial<Record<string, unknown>>;
  const chainId = typeof object.chain_id === "string" ? object.chain_id : "";
  const approvals = Array.isArray(object.approvals) ? (object.approvals as ReceiptApproval[]) : [];
  const checked = verifyApprovalRecords(
    { chain_id: chainId, approvals },
    records.approvals,
    approvalKeys,
    label,
  );
  for (const record of records.approvals) {
    const r = (isObject(record) ? record : {}) as Partial<Record<string, unknown>>;
    const revokedAt = typeof r.kid === "string" ? approvalRevocations.get(r.kid) : undefined;
    if (revokedAt === undefined || revocationOf(revokedAt, r.decided_at ?? r.requested_at) !== "revoked")
      continue;
    const id = typeof r.approval_id === "string" ? r.approval_id : null;
    checked.mismatches.push({ kind: ApprovalMismatchKind.revoked_key, approval_id: id });
    checked.problems.push(
      revokedProblem(`approval ${id ?? "(no id)"} of ${label}`, r.kid as string, revokedAt),
    );
    checked.status = "invalid";
  }
  return {
    receipt_format: format,
    events: verifyEventChain(object as unknown as EventCommitments, records.events, label),
    approvals: checked,
  };
}

/**
 * True when a receipt's evidence does not count against it: both checks valid, or both
 * not_evaluated because the receipt is a pre-event-chain receipt. A receipt that commits to its
 * events never passes with an unevaluated check.
 */
export function evidencePasses(check: ReceiptEvidenceCheck): boolean {
  const expected: EvidenceStatus = check.receipt_format === "pre_event_chain" ? "not_evaluated" : "valid";
  return check.events.status === expected && check.approvals.status === expected;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
