/**
 * Signed checkpoints of an organization's receipt log, against tail truncation (issue 18 §2;
 * README "Checkpoints").
 *
 * Hash links prove that each receipt follows the one before it, but not that the log still
 * reaches as far as it once did: deleting the newest receipts and rewinding the organization's
 * counters leaves a shorter log that verifies. A checkpoint is the service's signed statement
 * "the log of `organization` ended at receipt `sequence`, whose receiptHash is `receipt_hash`,
 * at `issued_at`". Whoever keeps one can later check that the log still extends it: the
 * receipt at that sequence exists and has that hash.
 *
 * The signature is Ed25519 by a receipt key (the JWKS at
 * /.well-known/tollgate/receipt-keys.json) over the canonical JSON (RFC 8785) of the checkpoint
 * without `signature`; `format` and `kid` are signed too.
 *
 * Pure: no I/O, no clock.
 */
import type { KeyObject } from "node:crypto";
import { z } from "zod";
import { canonicalJson } from "./canonical.js";
import { ed25519Sign, ed25519Verify } from "./ed25519.js";
import { parseReceiptNumber } from "./number.js";
import {
  Ed25519SignatureSchema,
  KeyIdSchema,
  OrganizationSlugSchema,
  ReceiptHashSchema,
  ReceiptNumberSchema,
} from "./schema.js";

/** Value of `format` of every checkpoint. */
export const CHECKPOINT_FORMAT = "tollgate.receipt-checkpoint.v1";

const checkpointFields = {
  format: z.literal(CHECKPOINT_FORMAT),
  /** Organization slug. */
  organization: OrganizationSlugSchema,
  /** Sequence of the newest receipt; 0 when the organization had none. */
  sequence: z.number().int().nonnegative(),
  /** Number of that receipt; null for sequence 0. */
  receipt_number: ReceiptNumberSchema.nullable(),
  /** receiptHash (`sha256:<hex>`) of that receipt; null for sequence 0. */
  receipt_hash: ReceiptHashSchema.nullable(),
  /** When the service signed it (ISO 8601 UTC). */
  issued_at: z.iso.datetime(),
  /** The receipt key that signed it. */
  kid: KeyIdSchema,
};

type Facts = { sequence: number; receipt_number: string | null; receipt_hash: string | null };

function checkFacts(c: Facts, ctx: z.RefinementCtx): void {
  const empty = c.sequence === 0;
  if (empty !== (c.receipt_number === null) || empty !== (c.receipt_hash === null)) {
    ctx.addIssue({
      code: "custom",
      path: ["receipt_hash"],
      message: "receipt_number and receipt_hash are null exactly when sequence is 0",
    });
  }
  if (c.receipt_number !== null && parseReceiptNumber(c.receipt_number)?.sequence !== c.sequence) {
    ctx.addIssue({
      code: "custom",
      path: ["receipt_number"],
      message: "receipt_number is not sequence's number",
    });
  }
}

/** The signed facts of a checkpoint (everything but `signature`). */
export const CheckpointFieldsSchema = z.strictObject(checkpointFields).superRefine(checkFacts);
export type CheckpointFields = z.infer<typeof CheckpointFieldsSchema>;

/** A signed checkpoint, as returned by chain completion and GET /v1/receipts/checkpoint. */
export const CheckpointSchema = z
  .strictObject({ ...checkpointFields, signature: Ed25519SignatureSchema })
  .superRefine(checkFacts);
export type Checkpoint = z.infer<typeof CheckpointSchema>;

/**
 * The text a checkpoint signature covers: canonical JSON of the checkpoint without `signature`.
 * @throws TypeError when it holds non-JSON values.
 */
export function checkpointSigningInput(checkpoint: CheckpointFields | Checkpoint): string {
  const { signature: _signature, ...fields } = checkpoint as Checkpoint;
  return canonicalJson(fields);
}

/**
 * Signs a checkpoint with an Ed25519 receipt key.
 * @throws ZodError when the facts do not match CheckpointFieldsSchema.
 * @throws TypeError when the key is not an Ed25519 private key.
 */
export function signCheckpoint(
  facts: Omit<CheckpointFields, "format" | "kid">,
  key: { kid: string; privateKey: KeyObject },
): Checkpoint {
  const fields = CheckpointFieldsSchema.parse({ format: CHECKPOINT_FORMAT, ...facts, kid: key.kid });
  return { ...fields, signature: ed25519Sign(checkpointSigningInput(fields), key.privateKey) };
}

/** Ed25519 status of a checkpoint: valid, invalid, or unknown_key (kid outside the trusted set). */
export type CheckpointSignatureStatus = "valid" | "invalid" | "unknown_key";

/** Checks a parsed checkpoint's signature against trusted receipt keys (kid → public key). */
export function verifyCheckpointSignature(
  checkpoint: Checkpoint,
  keys: ReadonlyMap<string, KeyObject>,
): CheckpointSignatureStatus {
  const key = keys.get(checkpoint.kid);
  if (!key) return "unknown_key";
  let input: string;
  try {
    input = checkpointSigningInput(checkpoint);
  } catch {
    return "invalid";
  }
  return ed25519Verify(input, checkpoint.signature, key) ? "valid" : "invalid";
}

/**
 * Whether a log still extends a checkpoint: extended (the receipt at its sequence has its hash);
 * truncated (the log ends before that sequence: the newest receipts were removed); missing (the
 * log goes further but that receipt is gone); forked (another receipt has that sequence: the log
 * was rewritten); not_covered (the receipts at hand do not include that sequence, so nothing can
 * be said: export a range that does); other_organization.
 */
export const CheckpointLogStatus = {
  extended: "extended",
  truncated: "truncated",
  missing: "missing",
  forked: "forked",
  not_covered: "not_covered",
  other_organization: "other_organization",
} as const;
export type CheckpointLogStatus = (typeof CheckpointLogStatus)[keyof typeof CheckpointLogStatus];

/** What a verifier knows about the log it compares a checkpoint with. */
export interface LogView {
  organization: string;
  /** The log's newest sequence (0 when empty). */
  latestSequence: number;
  /**
   * The receiptHash of the receipt at `sequence`: a string when known, null when the log lacks
   * that receipt, undefined when the receipts at hand do not cover that sequence.
   */
  hashAt(sequence: number): string | null | undefined;
}

/**
 * Compares a checkpoint with a log; `problems` explain every status but extended. Never throws.
 */
export function checkpointLogStatus(
  checkpoint: Checkpoint,
  log: LogView,
): { status: CheckpointLogStatus; problems: string[] } {
  const name = checkpoint.receipt_number ?? `sequence ${checkpoint.sequence}`;
  if (checkpoint.organization !== log.organization) {
    return {
      status: "other_organization",
      problems: [`the checkpoint is of organization ${checkpoint.organization}, not ${log.organization}`],
    };
  }
  if (checkpoint.sequence === 0) return { status: "extended", problems: [] };
  if (log.latestSequence < checkpoint.sequence) {
    return {
      status: "truncated",
      problems: [
        `the log ends at sequence ${log.latestSequence}, before the checkpoint's ${name} (sequence ${checkpoint.sequence}): newer receipts were removed`,
      ],
    };
  }
  const hash = log.hashAt(checkpoint.sequence);
  if (hash === undefined) {
    return {
      status: "not_covered",
      problems: [
        `the receipts at hand do not include the checkpoint's ${name} (sequence ${checkpoint.sequence}); verify a range that does`,
      ],
    };
  }
  if (hash === null) {
    return {
      status: "missing",
      problems: [`the checkpoint's ${name} (sequence ${checkpoint.sequence}) is missing from the log`],
    };
  }
  if (hash !== checkpoint.receipt_hash) {
    return {
      status: "forked",
      problems: [
        `the receipt at sequence ${checkpoint.sequence} is not the checkpoint's ${name}: the log was rewritten`,
      ],
    };
  }
  return { status: "extended", problems: [] };
}
