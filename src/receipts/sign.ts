/**
 * Receipt signing and hash chaining (spec: Receipt, "Signing and chaining rules").
 *
 * - Signed data: the canonical JSON (RFC 8785, `canonical.ts`) of the receipt body, i.e. the
 *   signed receipt without its `signature` and `ed25519` fields, as UTF-8 bytes.
 * - `signature` = `hmac-sha256:` + lowercase hex HMAC-SHA256 of the signed data with the
 *   service's secret key (rule 2). The key never leaves the service.
 * - `ed25519` = `{ kid, signature }`, the base64url Ed25519 signature of the same signed data
 *   (our addition, so receipts can be checked without the HMAC key).
 * - receiptHash = `sha256:` + lowercase hex SHA-256 of the canonical JSON of the FULL signed
 *   receipt, signatures included. The next receipt of the same organization stores it as
 *   previous_receipt_hash (rule 3), so deleting or reordering receipts is detectable (rule 4).
 */
import { createHash, createHmac, type KeyObject, timingSafeEqual } from "node:crypto";
import { canonicalJson } from "./canonical.js";
import { ed25519Sign } from "./ed25519.js";
import {
  type AnyReceiptBody,
  type AnySignedReceipt,
  type ReceiptBody,
  ReceiptBodySchema,
  type SignedReceipt,
} from "./schema.js";

/** Minimum HMAC key length in bytes (the SHA-256 output size; RFC 2104 discourages shorter keys). */
export const MIN_HMAC_KEY_BYTES = 32;

const HMAC_PREFIX = "hmac-sha256:";
const HMAC_SIGNATURE = /^hmac-sha256:([0-9a-f]{64})$/;

/**
 * The receipt body of a receipt: a shallow copy without `signature` and `ed25519`. Accepts a
 * body (returned as a copy) or a signed receipt, of either format (schema.ts). Does not validate.
 */
export function receiptBody(receipt: ReceiptBody | SignedReceipt): ReceiptBody;
export function receiptBody(receipt: AnyReceiptBody | AnySignedReceipt): AnyReceiptBody;
export function receiptBody(receipt: AnyReceiptBody | AnySignedReceipt): AnyReceiptBody {
  const { signature: _signature, ed25519: _ed25519, ...body } = receipt as AnySignedReceipt;
  return body;
}

/**
 * The signed data of a receipt: canonical JSON of its body (the receipt without `signature`
 * and `ed25519`). Accepts a body or a signed receipt; both give the same text.
 *
 * @throws TypeError when the receipt holds non-JSON values (see `canonicalJson`).
 */
export function signingInput(receipt: AnyReceiptBody | AnySignedReceipt): string {
  return canonicalJson(receiptBody(receipt));
}

/**
 * `hmac-sha256:<64 lowercase hex>`: HMAC-SHA256 of `signingInput(body)` with `key`.
 * Accepts a body or a signed receipt (its signatures are not signed). Does not validate the
 * body against the schema; use `signReceipt` to produce receipts.
 *
 * @throws RangeError when the key is shorter than 32 bytes.
 * @throws TypeError when the body holds non-JSON values.
 */
export function hmacSignature(body: AnyReceiptBody | AnySignedReceipt, key: Buffer): string {
  assertHmacKey(key);
  return HMAC_PREFIX + hmacDigest(signingInput(body), key).toString("hex");
}

/**
 * True when `signature` is the HMAC signature of `body` under `key`. Compares in constant time
 * (`timingSafeEqual` over equal-length digests). A signature that is not of the form
 * `hmac-sha256:<64 lowercase hex>`, or a body that cannot be canonicalized, gives false.
 *
 * @throws RangeError when the key is shorter than 32 bytes (a configuration error, not a
 *   property of the receipt).
 */
export function verifyHmac(body: AnyReceiptBody | AnySignedReceipt, signature: string, key: Buffer): boolean {
  assertHmacKey(key);
  let input: string | null;
  try {
    input = signingInput(body);
  } catch {
    input = null;
  }
  return hmacMatches(input, signature, key);
}

/**
 * True when `signature` is `hmac-sha256:` + the HMAC-SHA256 of `input` (a receipt's signing
 * input, null when it could not be computed) under `key` (the key's bytes, or a secret KeyObject
 * of them, which `createHmac` need not prepare again); `verifyHmac` once the input is known.
 * Compares in constant time. Does not check the key length.
 */
export function hmacMatches(input: string | null, signature: unknown, key: Buffer | KeyObject): boolean {
  const match = typeof signature === "string" ? HMAC_SIGNATURE.exec(signature) : null;
  const given = Buffer.from(match?.[1] ?? "", "hex");
  if (input === null) return false;
  const expected = hmacDigest(input, key);
  // Compare equal lengths even for a malformed signature, so timing does not depend on it.
  const comparable = given.length === expected.length ? given : Buffer.alloc(expected.length);
  return timingSafeEqual(comparable, expected) && given.length === expected.length;
}

/**
 * `sha256:<64 lowercase hex>`: SHA-256 of the canonical JSON of the full signed receipt,
 * `signature` and `ed25519` included. The next receipt's previous_receipt_hash.
 *
 * @throws TypeError when the receipt holds non-JSON values.
 */
export function receiptHash(signed: AnySignedReceipt): string {
  return hashOfCanonical(canonicalJson(signed));
}

/** `sha256:<64 lowercase hex>` of a receipt's canonical text: `receiptHash` once the text is known. */
export function hashOfCanonical(text: string): string {
  return "sha256:" + createHash("sha256").update(text, "utf8").digest("hex");
}

/** Keys for `signReceipt`. */
export interface SigningKeys {
  /** The service's secret HMAC key, at least 32 bytes (e.g. `crypto.randomBytes(32)`). */
  hmacKey: Buffer;
  /** Optional Ed25519 key; the receipt's `ed25519` is null without it. */
  ed25519?: { kid: string; privateKey: KeyObject };
}

/**
 * Validates `body` against ReceiptBodySchema and signs it: HMAC always, Ed25519 when a key is
 * given. Returns the validated body (a new object) plus `signature` and `ed25519`.
 *
 * The caller sets previous_receipt_hash (receiptHash of the organization's previous receipt,
 * null for its first) and receipt_number before signing; both are covered by the signatures.
 *
 * @throws ZodError when the body does not match ReceiptBodySchema.
 * @throws RangeError when the HMAC key is shorter than 32 bytes.
 * @throws TypeError when the Ed25519 key is not an Ed25519 private key.
 */
export function signReceipt(body: ReceiptBody, keys: SigningKeys): SignedReceipt {
  const parsed = ReceiptBodySchema.parse(body);
  const input = signingInput(parsed);
  assertHmacKey(keys.hmacKey);
  const signature = HMAC_PREFIX + hmacDigest(input, keys.hmacKey).toString("hex");
  const ed25519 = keys.ed25519
    ? { kid: keys.ed25519.kid, signature: ed25519Sign(input, keys.ed25519.privateKey) }
    : null;
  return { ...parsed, signature, ed25519 };
}

function hmacDigest(input: string, key: Buffer | KeyObject): Buffer {
  return createHmac("sha256", key).update(input, "utf8").digest();
}

/** @throws RangeError unless `key` is a Buffer of at least MIN_HMAC_KEY_BYTES bytes. */
export function assertHmacKey(key: Buffer): void {
  if (!Buffer.isBuffer(key) || key.length < MIN_HMAC_KEY_BYTES) {
    throw new RangeError(`the receipt HMAC key must be a Buffer of at least ${MIN_HMAC_KEY_BYTES} bytes`);
  }
}
