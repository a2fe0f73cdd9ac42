/**
 * The receipt export format (beyond the spec: evidence a third party can check offline). The
 * service produces it at GET /v1/receipts/export; `tollgate verify` checks it without the HMAC
 * key. Pure: shared by the service (which signs the manifest) and the CLI (which verifies it).
 *
 * An export (format v2) holds an organization's receipts `from_sequence`..`to_sequence` in
 * order, the `anchor` (number and receiptHash of the receipt just before the range, null when
 * the range starts at the genesis receipt), the `head` (number and receiptHash of the last
 * exported receipt), `latest_sequence` (where the organization's log ended when exported), the
 * evidence of the receipts' chains — every recorded `events` item (sanitized, as hashed into the
 * event chain: src/receipts/event-chain.ts) and every `approvals` record with its Ed25519
 * signature (src/receipts/approval-record.ts), both in receipt order — the service's receipt
 * and approval public keys as JWKS, and an Ed25519 `attestation` by the service's receipt key
 * over the manifest (everything but the receipts, evidence and keys), which pins the range:
 * removing receipts at the end, or changing the anchor, fails it.
 */
import { z } from "zod";
import { canonicalJson } from "../receipts/canonical.js";

/** Value of `format` of every export. */
export const RECEIPT_EXPORT_FORMAT = "tollgate.receipt-export.v2";

/** `{ receipt_number, receipt_hash }` of one receipt (receipt_hash = `sha256:<hex>`). */
export const ReceiptPointerSchema = z
  .object({
    receipt_number: z.string(),
    receipt_hash: z.string().regex(/^sha256:[0-9a-f]{64}$/, "must have the form sha256:<64 lowercase hex>"),
  })
  .strict();
export type ReceiptPointer = z.infer<typeof ReceiptPointerSchema>;

/** The whole export document. Receipts are checked one by one by the verifier, not here. */
export const ReceiptExportSchema = z
  .object({
    format: z.literal(RECEIPT_EXPORT_FORMAT),
    organization: z.string().min(1),
    /** First sequence of the range, ≥ 1. */
    from_sequence: z.number().int().min(1),
    /** Last sequence of the range; from_sequence - 1 when the range is empty. */
    to_sequence: z.number().int().min(0),
    exported_at: z.iso.datetime(),
    anchor: ReceiptPointerSchema.nullable(),
    head: ReceiptPointerSchema.nullable(),
    /** The organization's newest receipt sequence when exported (0: none); ≥ to_sequence. */
    latest_sequence: z.number().int().min(0),
    receipts: z.array(z.unknown()),
    /** Events of the receipts' chains (ExportedEventSchema), chain by chain in receipt order, each in sequence order. */
    events: z.array(z.unknown()),
    /** Approval records of the receipts' chains (ApprovalRecordSchema), in receipt order. */
    approvals: z.array(z.unknown()),
    /** The service's receipt signing keys (active and retired). */
    jwks: z.object({ keys: z.array(z.unknown()) }).loose(),
    /** The service's approval signing keys (active and retired). */
    approval_jwks: z.object({ keys: z.array(z.unknown()) }).loose(),
    /** Ed25519 signature (base64url) over `exportSigningInput`, by a receipt key. */
    attestation: z
      .object({ kid: z.string().min(1), signature: z.string() })
      .strict()
      .nullable(),
  })
  .strict()
  .refine((e) => e.to_sequence >= e.from_sequence - 1, {
    message: "must not be below from_sequence - 1",
    path: ["to_sequence"],
  })
  .refine((e) => e.latest_sequence >= e.to_sequence, {
    message: "must not be below to_sequence",
    path: ["latest_sequence"],
  });
export type ReceiptExport = z.infer<typeof ReceiptExportSchema>;

/** The manifest fields of an export that its attestation covers. */
export type ExportManifestFields = Pick<
  ReceiptExport,
  | "format"
  | "organization"
  | "from_sequence"
  | "to_sequence"
  | "exported_at"
  | "anchor"
  | "head"
  | "latest_sequence"
> & { receipt_count: number };

/**
 * The text the export attestation signs: canonical JSON (RFC 8785) of the manifest, with
 * `type` set so that it can never be mistaken for a signed receipt body.
 */
export function exportSigningInput(m: ExportManifestFields): string {
  return canonicalJson({
    type: "tollgate.receipt-export-manifest.v2",
    format: m.format,
    organization: m.organization,
    from_sequence: m.from_sequence,
    to_sequence: m.to_sequence,
    receipt_count: m.receipt_count,
    exported_at: m.exported_at,
    anchor: m.anchor,
    head: m.head,
    latest_sequence: m.latest_sequence,
  });
}
