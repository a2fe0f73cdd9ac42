/**
 * Receipts: canonical JSON (RFC 8785), HMAC-SHA256 signatures, SHA-256 hash chaining, Ed25519
 * signatures, receipt numbering and chain verification (spec: Receipt, "Verification
 * results"), the event hash chain, approval records, receipt evidence (both receipt formats)
 * and checkpoints (issue 18 §2). Pure: no I/O, no clock reads; depends on nothing of ours but
 * zod.
 */
export {
  APPROVAL_ATTESTATION_FORMAT,
  type ApprovalAttestation,
  ApprovalAttestationSchema,
  type ApprovalMismatch,
  ApprovalMismatchKind,
  type ApprovalRecord,
  ApprovalRecordSchema,
  type ApprovalRecordsCheck,
  approvalAttestationText,
  attestationOfRecord,
  verifyApprovalRecords,
} from "./approval-record.js";
export { canonicalBytes, canonicalJson } from "./canonical.js";
export {
  CHECKPOINT_FORMAT,
  type Checkpoint,
  type CheckpointFields,
  CheckpointFieldsSchema,
  CheckpointLogStatus,
  CheckpointSchema,
  type CheckpointSignatureStatus,
  checkpointLogStatus,
  checkpointSigningInput,
  type LogView,
  signCheckpoint,
  verifyCheckpointSignature,
} from "./checkpoint.js";
export {
  ed25519Sign,
  ed25519Verify,
  exportJwks,
  exportPrivateKeyPem,
  exportPublicJwk,
  exportPublicKeyPem,
  generateSigningKey,
  importPrivateKeyPem,
  importPublicJwk,
  importPublicKeyPem,
  type Jwks,
  keyIdOf,
  type PublicJwk,
  PublicJwkInputSchema,
  type SigningKey,
} from "./ed25519.js";
export {
  EVENT_HASH_TYPE,
  type EventChainCheck,
  type EventChainCommitment,
  type EventCommitments,
  type EventMismatch,
  EventMismatchKind,
  type EventRecord,
  EventRecordSchema,
  type ExportedEvent,
  ExportedEventSchema,
  eventHash,
  eventHashInput,
  hashEventChain,
  outcomeSha256,
  verifyEventChain,
} from "./event-chain.js";
export {
  type ApprovalsEvidence,
  type EventsEvidence,
  type EvidenceStatus,
  evidencePasses,
  type ReceiptEvidenceCheck,
  verifyReceiptEvidence,
} from "./evidence.js";
export { formatReceiptNumber, parseReceiptNumber, type ReceiptNumberParts } from "./number.js";
export * from "./schema.js";
export {
  hmacSignature,
  MIN_HMAC_KEY_BYTES,
  receiptBody,
  receiptHash,
  type SigningKeys,
  signingInput,
  signReceipt,
  verifyHmac,
} from "./sign.js";
export {
  type PublicKeySet,
  type ReceiptAnchor,
  receiptAnchor,
  type VerifyChainOptions,
  type VerifyOptions,
  verifyReceipt,
  verifyReceiptChain,
  verifyReceiptLink,
} from "./verify.js";
