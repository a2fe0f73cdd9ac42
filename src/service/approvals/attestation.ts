/**
 * Ed25519 attestation of approval resolutions (spec: "Verification results": authenticated
 * approval verification separates integrity, Ed25519 signature status and key-trust status).
 *
 * When an approval is resolved (approved, denied, timed out, cancelled), the service signs the
 * canonical JSON (RFC 8785) of the facts it recorded, with its active "approval" key, and stores
 * the signed text, the base64url signature and the key id in approvals.signed_payload,
 * signature and signing_kid. Verification recomputes the payload from the row's current columns:
 * a changed column (notes, decided_by, status, ...) no longer matches the signed text
 * (integrity) nor the signature.
 */
import {
  APPROVAL_ATTESTATION_FORMAT,
  type ApprovalAttestation,
  type ApprovalRecord,
  approvalAttestationText,
} from "../../receipts/approval-record.js";
import { ed25519Sign } from "../../receipts/ed25519.js";
import type { Queryable } from "../db/pool.js";
import type { SigningKey } from "../receipts/signing-keys.js";

/**
 * The approval columns an attestation covers, as read by {@link attestationSelect}: the
 * approval row joined with its time-boxed exception. Timestamps are Dates (timestamptz).
 */
export interface AttestedApprovalRow {
  id: string;
  org_id: string;
  chain_id: string;
  event_id: string;
  status: string;
  requested_at: Date;
  decided_at: Date | null;
  decided_by: string | null;
  notes: string | null;
  exception_id: string | null;
  final_decision: { policy_decision?: string; decision_source?: string } | null;
  exception_duration: string | null;
  exception_expires_at: Date | null;
  signed_payload: string | null;
  signature: string | null;
  signing_kid: string | null;
}

/** SELECT of one approval with the columns {@link approvalAttestationPayload} needs; `$1` = id. */
export const attestationSelect = `SELECT a.id, a.org_id, a.chain_id, a.event_id, a.status, a.requested_at, a.decided_at,
    a.decided_by, a.notes, a.exception_id, a.final_decision, a.signed_payload, a.signature, a.signing_kid,
    e.duration AS exception_duration, e.expires_at AS exception_expires_at
  FROM approvals a LEFT JOIN exceptions e ON e.id = a.exception_id`;

const iso = (d: Date | string | null): string | null => (d === null ? null : new Date(d).toISOString());

/**
 * The attested facts of an approval row's current columns, bound to the key id `kid` (see
 * src/receipts/approval-record.ts).
 */
export function approvalAttestation(row: AttestedApprovalRow, kid: string): ApprovalAttestation {
  return {
    format: APPROVAL_ATTESTATION_FORMAT,
    approval_id: row.id,
    organization_id: row.org_id,
    chain_id: row.chain_id,
    event_id: row.event_id,
    status: row.status,
    policy_decision: row.final_decision?.policy_decision ?? null,
    decision_source: row.final_decision?.decision_source ?? null,
    decided_by: row.decided_by,
    notes: row.notes,
    requested_at: iso(row.requested_at)!,
    decided_at: iso(row.decided_at),
    exception: row.exception_id
      ? {
          exception_id: row.exception_id,
          duration: row.exception_duration,
          expires_at: iso(row.exception_expires_at),
        }
      : null,
    kid,
  };
}

/**
 * The canonical JSON text an approval's attestation signs, computed from the row's current
 * columns and the key id `kid`.
 * @throws TypeError when a column holds a non-JSON value (not expected from the database).
 */
export function approvalAttestationPayload(row: AttestedApprovalRow, kid: string): string {
  return approvalAttestationText(approvalAttestation(row, kid));
}

/**
 * The approval record of a row as exports and receipt verification compare it: the attested
 * facts of the row's CURRENT columns with the recorded kid and signature (null when unsigned),
 * so a column changed after signing no longer verifies.
 */
export function approvalRecordOf(row: AttestedApprovalRow): ApprovalRecord {
  const { format: _format, kid: _kid, ...facts } = approvalAttestation(row, row.signing_kid ?? "");
  return { ...facts, kid: row.signing_kid, signature: row.signature };
}

/**
 * Signs the current state of a resolved approval with `key` (purpose "approval") and stores the
 * payload, signature and kid on the row. Call inside the transaction that resolved it, after the
 * resolution and any exception were written. Fetch the key (SigningKeys.active) BEFORE opening
 * the transaction.
 * @throws Error when the approval does not exist or is still pending.
 */
export async function signApprovalResolution(
  q: Queryable,
  approvalId: string,
  key: SigningKey,
): Promise<void> {
  const { rows } = await q.query<AttestedApprovalRow>(`${attestationSelect} WHERE a.id = $1`, [approvalId]);
  const row = rows[0];
  if (!row) throw new Error("cannot sign a missing approval");
  if (row.status === "pending") throw new Error("cannot sign a pending approval");
  const payload = approvalAttestationPayload(row, key.kid);
  await q.query("UPDATE approvals SET signed_payload = $2, signature = $3, signing_kid = $4 WHERE id = $1", [
    approvalId,
    payload,
    ed25519Sign(payload, key.privateKey),
    key.kid,
  ]);
}

/**
 * Signs, with `key` (purpose "approval"), every resolved approval of the chain that carries no
 * attestation yet — a timeout applied on read by a caller without keys and not yet re-signed by
 * its durable job, or a resolution recorded before approvals were signed — and returns their
 * ids. Called by chain completion in its transaction, before the receipt is built, so every
 * approval record a receipt commits to is signed (an unsigned record never verifies). Locks the
 * rows it signs. Fetch the key (SigningKeys.active) BEFORE opening the transaction.
 */
export async function signUnsignedResolutions(
  q: Queryable,
  chainId: string,
  key: SigningKey,
): Promise<string[]> {
  const { rows } = await q.query<{ id: string }>(
    `SELECT id FROM approvals WHERE chain_id = $1 AND status <> 'pending'
       AND (signature IS NULL OR signed_payload IS NULL OR signing_kid IS NULL)
     ORDER BY requested_at, id FOR UPDATE`,
    [chainId],
  );
  for (const { id } of rows) await signApprovalResolution(q, id, key);
  return rows.map((r) => r.id);
}
