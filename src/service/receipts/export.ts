/**
 * Receipt chain export for offline verification (beyond the spec; the format is in
 * src/cli/export-format.ts): GET /v1/receipts/export?from_sequence=&to_sequence= returns the
 * organization's receipts of that range in order, with the anchor before the range, the head,
 * the organization's latest sequence, the evidence of the receipts' chains (sanitized event
 * records and approval records with their Ed25519 signatures, read as stored now), the receipt
 * and approval JWKS and an Ed25519 attestation of the manifest. `tollgate verify` checks it
 * without the HMAC key.
 */
import { z } from "zod";
import {
  type ExportManifestFields,
  exportSigningInput,
  RECEIPT_EXPORT_FORMAT,
  type ReceiptExport,
  type ReceiptPointer,
} from "../../cli/export-format.js";
import { ed25519Sign } from "../../receipts/ed25519.js";
import { hashEventChain } from "../../receipts/event-chain.js";
import type { SignedReceipt } from "../../receipts/schema.js";
import { receiptAnchor } from "../../receipts/verify.js";
import { countEvents } from "../chains/store.js";
import type { Queryable } from "../db/pool.js";
import { badRequest } from "../errors.js";
import { orgById } from "../orgs/orgs.js";
import { loadApprovalRecords, loadEventRecords } from "./evidence.js";
import type { SigningKeys } from "./signing-keys.js";
import { receiptRange } from "./store.js";

/** Most receipts one export may hold. */
export const MAX_EXPORT_RECEIPTS = 1000;

/** Most events one export may hold (a chain holds at most 1000 by default: runaway limits). */
export const MAX_EXPORT_EVENTS = 100_000;

/** Query of GET /v1/receipts/export. Without to_sequence the export ends at the latest receipt. */
export const ExportQuerySchema = z
  .object({
    from_sequence: z.coerce.number().int().min(1).default(1),
    to_sequence: z.coerce.number().int().min(1).optional(),
  })
  .strict()
  .refine((q) => q.to_sequence === undefined || q.to_sequence >= q.from_sequence, {
    message: "must be at least from_sequence",
    path: ["to_sequence"],
  });
export type ExportQuery = z.infer<typeof ExportQuerySchema>;

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function pointer(body: unknown, storedNumber: string, storedHash: string): ReceiptPointer {
  try {
    return receiptAnchor(body as SignedReceipt);
  } catch {
    return { receipt_number: storedNumber, receipt_hash: storedHash };
  }
}

/**
 * Builds the export of an organization's receipts with the evidence of their chains.
 * @throws ApiError 400 when from_sequence is beyond the next receipt, or the range holds more
 *   than MAX_EXPORT_RECEIPTS receipts or MAX_EXPORT_EVENTS events.
 */
export async function exportReceipts(
  q: Queryable,
  opts: { orgId: string; query: ExportQuery; keys: SigningKeys; nowMs: number },
): Promise<ReceiptExport> {
  const org = await orgById(q, opts.orgId);
  const slug = org.slug;
  const latest = Number(org.receipt_seq);
  const from = opts.query.from_sequence;
  if (from > latest + 1) {
    throw badRequest(`from_sequence: beyond the latest receipt (sequence ${latest})`, {
      latest_sequence: latest,
    });
  }
  const to = Math.min(opts.query.to_sequence ?? latest, latest);
  if (to - from + 1 > MAX_EXPORT_RECEIPTS) {
    throw badRequest(`to_sequence: an export holds at most ${MAX_EXPORT_RECEIPTS} receipts`, {
      max_receipts: MAX_EXPORT_RECEIPTS,
    });
  }
  const rows = await receiptRange(q, opts.orgId, from - 1, to);
  const before = rows.find((r) => Number(r.sequence) === from - 1);
  const inRange = rows.filter((r) => Number(r.sequence) >= from);
  const receipts = inRange.map((r) => parse(r.body));
  const chainIds: string[] = inRange.map((r) => r.chain_id);
  if ((await countEvents(q, chainIds)) > MAX_EXPORT_EVENTS) {
    throw badRequest(
      `to_sequence: an export holds at most ${MAX_EXPORT_EVENTS} events; export a smaller range`,
      {
        max_events: MAX_EXPORT_EVENTS,
      },
    );
  }
  const eventsByChain = await loadEventRecords(q, chainIds);
  const approvalsByChain = await loadApprovalRecords(q, chainIds);
  const events = chainIds.flatMap((id) => {
    const records = eventsByChain.get(id) ?? [];
    const { hashes } = hashEventChain(records);
    return records.map((r, i) => ({ ...r, event_hash: hashes[i]! }));
  });
  const approvals = chainIds.flatMap((id) => approvalsByChain.get(id) ?? []);
  const last = inRange.at(-1);
  const manifest: ExportManifestFields = {
    format: RECEIPT_EXPORT_FORMAT,
    organization: slug,
    from_sequence: from,
    to_sequence: to,
    exported_at: new Date(opts.nowMs).toISOString(),
    anchor: before ? pointer(parse(before.body), before.receipt_number, before.receipt_hash) : null,
    head: last ? pointer(receipts.at(-1), last.receipt_number, last.receipt_hash) : null,
    latest_sequence: latest,
    receipt_count: receipts.length,
  };
  const key = await opts.keys.active("receipt");
  const { receipt_count: _count, ...fields } = manifest;
  return {
    ...fields,
    receipts,
    events,
    approvals,
    jwks: await opts.keys.jwks("receipt"),
    approval_jwks: await opts.keys.jwks("approval"),
    attestation: { kid: key.kid, signature: ed25519Sign(exportSigningInput(manifest), key.privateKey) },
  };
}
