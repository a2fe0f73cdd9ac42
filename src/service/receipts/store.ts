/**
 * The receipt store: every SQL statement on `receipts` rows and on the organization's receipt
 * log head (`organizations.receipt_seq`, `last_receipt_hash`) (spec: "Receipt", hash-chained per
 * organization). Completion appends under the log's row lock; verification, export and
 * checkpoints read.
 */
import type { SignedReceipt } from "../../receipts/schema.js";
import type { Queryable } from "../db/pool.js";
import { notFound } from "../errors.js";

/** A row of `receipts`: the canonical JSON body and where it stands in the organization's chain. */
export interface ReceiptRow {
  id: string;
  org_id: string;
  chain_id: string;
  sequence: number;
  receipt_number: string;
  body: string;
  receipt_hash: string;
  /** The HMAC key its `signature` was made with; null: the key derived from the master key. */
  hmac_kid: string | null;
  /** When it was issued: the time its signatures were made. */
  created_at: Date;
}

/** A stored receipt row with its parsed body. */
export interface StoredReceipt extends ReceiptRow {
  receipt: SignedReceipt;
}

const ROW_COLUMNS =
  "id, org_id, chain_id, sequence, receipt_number, body, receipt_hash, hmac_kid, created_at";

/** The head of an organization's receipt log: the last sequence and receipt hash (0 and null when empty). */
export interface ReceiptLogHead {
  sequence: number;
  lastHash: string | null;
}

/**
 * Locks the organization's receipt log until the transaction ends (every append of the
 * organization waits here) and returns its head.
 */
export async function lockReceiptLog(q: Queryable, orgId: string): Promise<ReceiptLogHead> {
  const { rows } = await q.query(
    "SELECT receipt_seq, last_receipt_hash FROM organizations WHERE id = $1 FOR UPDATE",
    [orgId],
  );
  return { sequence: Number(rows[0]!.receipt_seq), lastHash: rows[0]!.last_receipt_hash ?? null };
}

/** Appends a receipt to the organization's log (the caller holds lockReceiptLog) and moves the head. */
export async function appendReceipt(
  q: Queryable,
  r: Omit<ReceiptRow, "hmac_kid" | "created_at"> & { hmacKid: string; createdAt: Date },
): Promise<void> {
  await q.query(
    `INSERT INTO receipts (id, org_id, chain_id, sequence, receipt_number, body, receipt_hash, hmac_kid, created_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)`,
    [
      r.id,
      r.org_id,
      r.chain_id,
      r.sequence,
      r.receipt_number,
      r.body,
      r.receipt_hash,
      r.hmacKid,
      r.createdAt,
    ],
  );
  await q.query("UPDATE organizations SET receipt_seq = $2, last_receipt_hash = $3 WHERE id = $1", [
    r.org_id,
    r.sequence,
    r.receipt_hash,
  ]);
}

/** A receipt row of the organization by id; null when absent. */
export async function findReceiptRow(
  q: Queryable,
  orgId: string,
  receiptId: string,
): Promise<ReceiptRow | null> {
  const { rows } = await q.query<ReceiptRow>(
    `SELECT ${ROW_COLUMNS} FROM receipts WHERE id = $1 AND org_id = $2`,
    [receiptId, orgId],
  );
  return rows[0] ?? null;
}

const stored = (row: ReceiptRow | undefined | null): StoredReceipt => {
  if (!row) throw notFound("Receipt");
  return { ...row, receipt: JSON.parse(row.body) };
};

/** A receipt of an organization by receipt id; 404 when missing or another organization's. */
export async function getReceipt(q: Queryable, orgId: string, receiptId: string): Promise<StoredReceipt> {
  return stored(await findReceiptRow(q, orgId, receiptId));
}

/** The receipt of a chain; 404 when the chain has none yet (spec: exists only after completion). */
export async function getChainReceipt(q: Queryable, orgId: string, chainId: string): Promise<StoredReceipt> {
  const { rows } = await q.query<ReceiptRow>(
    `SELECT ${ROW_COLUMNS} FROM receipts WHERE chain_id = $1 AND org_id = $2`,
    [chainId, orgId],
  );
  return stored(rows[0]);
}

/** The receipt just before `sequence` in the organization's log, or null. */
export async function predecessorOf(
  q: Queryable,
  orgId: string,
  sequence: number,
): Promise<ReceiptRow | null> {
  const { rows } = await q.query<ReceiptRow>(
    `SELECT ${ROW_COLUMNS} FROM receipts WHERE org_id = $1 AND sequence < $2 ORDER BY sequence DESC LIMIT 1`,
    [orgId, sequence],
  );
  return rows[0] ?? null;
}

/** The organization's newest stored receipt, or null when it has none. */
export async function newestReceipt(q: Queryable, orgId: string): Promise<ReceiptRow | null> {
  const { rows } = await q.query<ReceiptRow>(
    `SELECT ${ROW_COLUMNS} FROM receipts WHERE org_id = $1 ORDER BY sequence DESC LIMIT 1`,
    [orgId],
  );
  return rows[0] ?? null;
}

/** The receipt at `sequence` of the organization's log, or null. */
export async function receiptAt(q: Queryable, orgId: string, sequence: number): Promise<ReceiptRow | null> {
  const { rows } = await q.query<ReceiptRow>(
    `SELECT ${ROW_COLUMNS} FROM receipts WHERE org_id = $1 AND sequence = $2`,
    [orgId, sequence],
  );
  return rows[0] ?? null;
}

/** The organization's receipts with `from` ≤ sequence ≤ `to`, in log order. */
export async function receiptRange(
  q: Queryable,
  orgId: string,
  from: number,
  to: number,
): Promise<ReceiptRow[]> {
  const { rows } = await q.query<ReceiptRow>(
    `SELECT ${ROW_COLUMNS} FROM receipts WHERE org_id = $1 AND sequence >= $2 AND sequence <= $3 ORDER BY sequence`,
    [orgId, from, to],
  );
  return rows;
}

/** A receipt as offered in the token form's picker. */
export interface ReceiptChoice {
  id: string;
  receipt_number: string;
}

/** The organization's latest `limit` receipts (verification tokens page), newest first. */
export async function recentReceipts(q: Queryable, orgId: string, limit = 20): Promise<ReceiptChoice[]> {
  const { rows } = await q.query<ReceiptChoice>(
    "SELECT id, receipt_number FROM receipts WHERE org_id = $1 ORDER BY sequence DESC LIMIT $2",
    [orgId, limit],
  );
  return rows;
}
