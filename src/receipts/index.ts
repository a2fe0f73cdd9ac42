/**
 * Receipts: canonical JSON (RFC 8785), HMAC-SHA256 signatures, SHA-256 hash chaining, Ed25519
 * signatures, receipt numbering and chain verification (spec: Receipt, "Verification
 * results"). Pure: no I/O, no clock reads; depends on nothing of ours but zod.
 */
export { canonicalBytes, canonicalJson } from "./canonical.js";
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
