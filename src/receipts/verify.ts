/**
 * Receipt verification (spec: Receipt "Signing and chaining rules" 4; "Verification results").
 *
 * Three independent checks per receipt:
 * - integrity: the HMAC `signature` over the canonical body. Needs the service's secret key, so
 *   only the service can evaluate it; without the key it is not_evaluated.
 * - ed25519: our Ed25519 signature over the same canonical body, checked against trusted
 *   public keys (a Map of kid → KeyObject, or a JWKS). A kid outside the trusted set is
 *   unknown_key and fails: anyone can sign with a key of their own.
 * - chain: the link to the organization's previous receipt. previous_receipt_hash must equal
 *   receiptHash(previous) and the sequence must be previous + 1. The sequence is the numeric
 *   suffix of receipt_number: per organization, starting at 1, NOT restarting each year (the
 *   year in the number is only the year of creation). Deleting a receipt shows as a gap at the
 *   next one; reordering shows as broken or gap links; altering a receipt fails its integrity
 *   and Ed25519 checks and, because receiptHash covers the whole receipt, breaks the next link.
 *
 * Both receipt formats are accepted (schema.ts `receiptFormatOf`): a receipt that commits to its
 * events (`event_chain`) must match SignedReceiptSchema; one issued before the event hash chain
 * (no `event_chain`) must match PreEventChainSignedReceiptSchema, exactly the shape it was
 * signed in, and gets the same three checks. Moving a receipt between the formats (stripping
 * `event_chain`) changes the signed bytes, so its signatures and the next link fail. Which
 * format a receipt has is reported (`receipt_format`); checking the chain's events and
 * approvals against it is `evidence.ts`.
 *
 * Problem messages name receipt numbers and sequences, never hashes, HMACs or signatures, so
 * the service may pass them on (spec: verification responses do not expose those).
 *
 * Pure: no I/O, no clock. Malformed input never throws; it is reported as invalid.
 */
import { createSecretKey, type KeyObject } from "node:crypto";
import { canonicalJson, canonicalJsonWithout } from "./canonical.js";
import { ed25519Verify, importPublicJwk } from "./ed25519.js";
import { parseReceiptNumber } from "./number.js";
import {
  type AnySignedReceipt,
  type ChainVerification,
  type Ed25519Status,
  type IntegrityStatus,
  type LinkCheck,
  type ReceiptCheck,
  safeParseSignedReceipt,
} from "./schema.js";
import { assertHmacKey, hashOfCanonical, hmacMatches, receiptHash, signingInput } from "./sign.js";

/** Trusted Ed25519 public keys: kid → key, or a JWKS (`{ keys: [jwk, ...] }`). */
export type PublicKeySet = ReadonlyMap<string, KeyObject> | { keys: readonly unknown[] };

/**
 * What is known about the receipt before the first one of a verified slice: its number and
 * its receiptHash (`sha256:<hex>`). Lets a verifier check a chain from a trusted checkpoint
 * instead of from genesis.
 */
export interface ReceiptAnchor {
  receipt_number: string;
  receipt_hash: string;
}

/** Options of `verifyReceipt` and `verifyReceiptChain`. */
export interface VerifyOptions {
  /** The service's HMAC key; without it integrity is not_evaluated. */
  hmacKey?: Buffer;
  /** Trusted Ed25519 public keys; without them the ed25519 check is not_evaluated. */
  publicKeys?: PublicKeySet;
  /** When true, a receipt without an Ed25519 signature (missing) fails. Default false. */
  requireEd25519?: boolean;
}

/** Options of `verifyReceiptChain`. */
export interface VerifyChainOptions extends VerifyOptions {
  /**
   * The predecessor of the first receipt, when the chain is a slice that does not start at
   * the organization's genesis receipt. Without it the first receipt must be the genesis.
   */
  anchor?: ReceiptAnchor | AnySignedReceipt;
}

/** The anchor (number and receiptHash) of a receipt, for verifying later slices from it. */
export function receiptAnchor(signed: AnySignedReceipt): ReceiptAnchor {
  return { receipt_number: signed.receipt_number, receipt_hash: receiptHash(signed) };
}

/**
 * Checks the link of `receipt` to its predecessor: the organization's previous receipt, an
 * anchor (its number and hash), or null when there is none.
 *
 * With a null predecessor: genesis when the receipt is sequence 1 with a null
 * previous_receipt_hash; gap when it is a later sequence that names a predecessor (the
 * predecessor is missing); broken otherwise (a null hash after sequence 1, or a hash on
 * sequence 1). With a predecessor: gap when the sequence skips numbers; broken when it does
 * not increase, when the organizations differ (checked only for a full predecessor, an anchor
 * has none), or when previous_receipt_hash is not receiptHash(predecessor); valid otherwise.
 *
 * Never throws; malformed input gives broken with a problem.
 */
export function verifyReceiptLink(
  receipt: AnySignedReceipt,
  predecessor: AnySignedReceipt | ReceiptAnchor | null,
): LinkCheck {
  return checkLink(receipt, predecessor, "the receipt", "its predecessor");
}

/**
 * `predecessorHash`: receiptHash(predecessor) when the caller already computed it (null: it
 * cannot be hashed); computed here when undefined. Ignored for an anchor, which carries its hash.
 */
function checkLink(
  receipt: AnySignedReceipt,
  predecessor: AnySignedReceipt | ReceiptAnchor | null,
  fallbackName: string,
  fallbackPredecessorName: string,
  predecessorHash?: string | null,
): LinkCheck {
  const name = labelOf(receipt, fallbackName);
  if (!isObject(receipt)) return broken(`${name} is not a receipt object`);
  const sequence = sequenceOf(receipt);
  if (sequence === null) return broken(`${name} has a malformed receipt number`);
  const previousHash = (receipt as { previous_receipt_hash?: unknown }).previous_receipt_hash;
  if (previousHash !== null && typeof previousHash !== "string") {
    return broken(`${name} has a malformed previous receipt hash`);
  }

  if (predecessor === null) {
    if (sequence === 1 && previousHash === null) return { status: "genesis", problems: [] };
    if (sequence === 1) return broken(`${name} is sequence 1 (genesis) but names a previous receipt`);
    if (previousHash === null) {
      return broken(
        `${name} has no previous receipt hash but is sequence ${sequence}, not the genesis receipt`,
      );
    }
    return {
      status: "gap",
      problems: [`the receipts before ${name} (sequence${range(1, sequence - 1)}) are missing`],
    };
  }

  if (!isObject(predecessor)) return broken(`the predecessor of ${name} is not a receipt`);
  const predecessorName = labelOf(predecessor, fallbackPredecessorName);
  const predecessorSequence = sequenceOf(predecessor);
  if (predecessorSequence === null) return broken(`${predecessorName} has a malformed receipt number`);
  let expectedHash: string;
  if ("receipt_hash" in predecessor) {
    const anchorHash: unknown = predecessor.receipt_hash;
    if (typeof anchorHash !== "string") return broken(`the anchor of ${name} has a malformed receipt hash`);
    expectedHash = anchorHash;
  } else {
    if (predecessor.organization !== (receipt as AnySignedReceipt).organization) {
      return broken(`${name} and ${predecessorName} belong to different organizations`);
    }
    const hash = predecessorHash === undefined ? hashOf(predecessor) : predecessorHash;
    if (hash === null) return broken(`${predecessorName} cannot be hashed: it holds non-JSON values`);
    expectedHash = hash;
  }

  if (sequence > predecessorSequence + 1) {
    return {
      status: "gap",
      problems: [
        `receipts between ${predecessorName} and ${name} (sequence${range(predecessorSequence + 1, sequence - 1)}) are missing`,
      ],
    };
  }
  if (sequence <= predecessorSequence) {
    return broken(
      `${name} (sequence ${sequence}) follows ${predecessorName} (sequence ${predecessorSequence}): out of order or duplicated`,
    );
  }
  if (previousHash === null) {
    return broken(`${name} has no previous receipt hash but follows ${predecessorName}`);
  }
  if (previousHash !== expectedHash) {
    return broken(`the previous receipt hash of ${name} does not match ${predecessorName}`);
  }
  return { status: "valid", problems: [] };
}

/**
 * Verifies one receipt: schema, HMAC integrity, Ed25519 signature and its link to
 * `predecessor` (see `verifyReceiptLink`; null means the receipt must be the genesis). For
 * the service's single-receipt checks, where the predecessor comes from storage.
 *
 * @throws TypeError when `publicKeys` is a JWKS holding a key that is not an Ed25519 public
 *   JWK (a configuration error). Malformed receipts never throw.
 * @throws RangeError when `hmacKey` is shorter than 32 bytes.
 */
export function verifyReceipt(
  receipt: AnySignedReceipt,
  predecessor: AnySignedReceipt | ReceiptAnchor | null,
  opts: VerifyOptions = {},
): ReceiptCheck {
  return checkReceipt(receipt, predecessor, opts, prepareKeys(opts), "the receipt").check;
}

/**
 * Verifies an exported receipt chain of ONE organization, ordered by sequence (the numeric
 * suffix of receipt_number, which runs across years). Each receipt is checked with
 * `verifyReceipt` against the receipt before it in the list; the first against `opts.anchor`,
 * or, without an anchor, as the organization's genesis receipt. Also reports receipts that
 * share a receipt_id or chain_id.
 *
 * overall_status is valid only when every check that could be evaluated passed: integrity
 * valid or not_evaluated, ed25519 valid, not_evaluated or missing (unless requireEd25519),
 * chain valid or genesis, and every receipt well-formed. An empty list is valid and not
 * authenticated. See ChainVerification.authenticated for what valid proves without keys.
 *
 * @throws TypeError when `publicKeys` is a JWKS holding a key that is not an Ed25519 public
 *   JWK. Malformed receipts never throw.
 * @throws RangeError when `hmacKey` is shorter than 32 bytes.
 */
export function verifyReceiptChain(
  receipts: readonly AnySignedReceipt[],
  opts: VerifyChainOptions = {},
): ChainVerification {
  const keys = prepareKeys(opts);
  const checks: ReceiptCheck[] = [];
  let predecessor: AnySignedReceipt | ReceiptAnchor | null = opts.anchor ?? null;
  // Each receipt is serialized once: its hash is the next receipt's expected previous hash.
  let predecessorHash: string | null | undefined;
  receipts.forEach((receipt, index) => {
    const predecessorName = index === 0 ? "the anchor" : `receipt #${index}`;
    const { check, hash } = checkReceipt(
      receipt,
      predecessor,
      opts,
      keys,
      `receipt #${index + 1}`,
      predecessorName,
      predecessorHash,
    );
    checks.push(check);
    predecessor = receipt;
    predecessorHash = hash;
  });

  const chainProblems = [
    ...duplicates(receipts, "receipt_id", checks),
    ...duplicates(receipts, "chain_id", checks),
  ];
  const problems = [...checks.flatMap((check) => check.problems), ...chainProblems];
  return {
    overall_status:
      problems.length === 0 && checks.every((c) => c.overall_status === "valid") ? "valid" : "invalid",
    authenticated:
      checks.length > 0 &&
      checks.every((check) => check.integrity.status === "valid" || check.ed25519.status === "valid"),
    receipts: checks,
    problems,
  };
}

/**
 * Checks one receipt; also returns its receiptHash (null when it cannot be hashed, undefined
 * when it is not an object), for the link of the next one.
 */
function checkReceipt(
  receipt: AnySignedReceipt,
  predecessor: AnySignedReceipt | ReceiptAnchor | null,
  opts: VerifyOptions,
  keys: PreparedKeys,
  fallbackName: string,
  predecessorName = "its predecessor",
  predecessorHash?: string | null,
): { check: ReceiptCheck; hash: string | null | undefined } {
  const name = labelOf(receipt, fallbackName);
  const problems: string[] = [];
  const { format, result: parsed } = safeParseSignedReceipt(receipt);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`);
    const schema = format === "event_chain" ? "the receipt schema" : "the pre-event-chain receipt schema";
    problems.push(`${name} does not match ${schema} (${issues.join("; ")})`);
  }

  const texts = isObject(receipt) ? canonicalTexts(receipt) : undefined;
  const integrity = integrityOf(receipt, keys.hmacKey, texts?.signingInput ?? null);
  if (integrity === "invalid") {
    problems.push(`${name} fails its integrity check: its signature does not match its contents`);
  }

  const ed25519 = ed25519Of(receipt, keys.publicKeys, texts?.signingInput ?? null);
  if (ed25519.status === "invalid") problems.push(`${name} has an invalid Ed25519 signature`);
  if (ed25519.status === "unknown_key") problems.push(`${name} is signed with an untrusted Ed25519 key`);
  if (ed25519.status === "missing" && opts.requireEd25519) problems.push(`${name} has no Ed25519 signature`);

  const link = checkLink(receipt, predecessor, fallbackName, predecessorName, predecessorHash);
  problems.push(...link.problems);

  const object = isObject(receipt) ? (receipt as Partial<Record<string, unknown>>) : {};
  const check: ReceiptCheck = {
    receipt_id: typeof object.receipt_id === "string" ? object.receipt_id : null,
    receipt_number: typeof object.receipt_number === "string" ? object.receipt_number : null,
    sequence: sequenceOf(receipt),
    receipt_format: format,
    well_formed: parsed.success,
    integrity: { status: integrity },
    ed25519,
    chain: { status: link.status },
    overall_status: problems.length === 0 ? "valid" : "invalid",
    problems,
  };
  const hash =
    texts === undefined ? undefined : texts.canonical === null ? null : hashOfCanonical(texts.canonical);
  return { check, hash };
}

/**
 * signingInput(receipt) and canonicalJson(receipt), each null when it cannot be computed
 * (non-JSON values), serialized together when both can be.
 */
function canonicalTexts(receipt: AnySignedReceipt): {
  signingInput: string | null;
  canonical: string | null;
} {
  try {
    const { full, without } = canonicalJsonWithout(receipt, SIGNATURE_FIELDS);
    return { signingInput: without, canonical: full };
  } catch {
    // Non-JSON values, maybe only in the signature fields that signingInput leaves out.
    return {
      signingInput: attempt(() => signingInput(receipt)),
      canonical: attempt(() => canonicalJson(receipt)),
    };
  }
}

/** The fields `receiptBody` strips: the signatures are not signed. */
const SIGNATURE_FIELDS = ["signature", "ed25519"] as const;

function attempt(compute: () => string): string | null {
  try {
    return compute();
  } catch {
    return null;
  }
}

function hashOf(receipt: AnySignedReceipt): string | null {
  return attempt(() => receiptHash(receipt));
}

function integrityOf(
  receipt: AnySignedReceipt,
  hmacKey: KeyObject | undefined,
  input: string | null,
): IntegrityStatus {
  if (hmacKey === undefined) return "not_evaluated";
  if (!isObject(receipt)) return "invalid";
  return hmacMatches(input, receipt.signature, hmacKey) ? "valid" : "invalid";
}

function ed25519Of(
  receipt: AnySignedReceipt,
  keys: ReadonlyMap<string, KeyObject> | null,
  input: string | null,
): { status: Ed25519Status; kid: string | null } {
  const signed = isObject(receipt) ? (receipt as { ed25519?: unknown }).ed25519 : undefined;
  if (signed === null || signed === undefined) return { status: "missing", kid: null };
  if (!isObject(signed)) return { status: "invalid", kid: null };
  const { kid, signature } = signed as { kid?: unknown; signature?: unknown };
  if (typeof kid !== "string" || typeof signature !== "string") return { status: "invalid", kid: null };
  if (keys === null) return { status: "not_evaluated", kid };
  const publicKey = keys.get(kid);
  if (publicKey === undefined) return { status: "unknown_key", kid };
  if (input === null) return { status: "invalid", kid };
  return { status: ed25519Verify(input, signature, publicKey) ? "valid" : "invalid", kid };
}

/**
 * The keys of one verification call, prepared once for all its receipts: the trusted public keys
 * as a map, and the HMAC key as a KeyObject (`createHmac` with a Buffer key prepares the key anew
 * on every call: 8% of a chain's verification in a profile).
 */
interface PreparedKeys {
  publicKeys: ReadonlyMap<string, KeyObject> | null;
  hmacKey: KeyObject | undefined;
}

/** @throws like `verifyReceipt`: RangeError for a short HMAC key, TypeError for a bad JWKS. */
function prepareKeys(opts: VerifyOptions): PreparedKeys {
  if (opts.hmacKey !== undefined) assertHmacKey(opts.hmacKey);
  return {
    publicKeys: keyMap(opts.publicKeys),
    hmacKey: opts.hmacKey === undefined ? undefined : createSecretKey(opts.hmacKey),
  };
}

function keyMap(keys: PublicKeySet | undefined): ReadonlyMap<string, KeyObject> | null {
  if (keys === undefined) return null;
  if ("get" in keys && typeof keys.get === "function") return keys as ReadonlyMap<string, KeyObject>;
  const jwks = (keys as { keys?: unknown }).keys;
  if (!Array.isArray(jwks))
    throw new TypeError("publicKeys must be a Map of kid to key or a JWKS ({ keys: [...] })");
  const map = new Map<string, KeyObject>();
  for (const jwk of jwks) {
    const { kid, publicKey } = importPublicJwk(jwk);
    map.set(kid, publicKey);
  }
  return map;
}

function duplicates(
  receipts: readonly AnySignedReceipt[],
  field: "receipt_id" | "chain_id",
  checks: readonly ReceiptCheck[],
): string[] {
  const seen = new Map<string, string>();
  const problems: string[] = [];
  receipts.forEach((receipt, index) => {
    const value = isObject(receipt) ? receipt[field] : undefined;
    if (typeof value !== "string") return;
    const name = checks[index]?.receipt_number ?? `receipt #${index + 1}`;
    const first = seen.get(value);
    if (first === undefined) seen.set(value, name);
    else problems.push(`${name} has the same ${field} as ${first}`);
  });
  return problems;
}

function broken(problem: string): LinkCheck {
  return { status: "broken", problems: [problem] };
}

function sequenceOf(receipt: unknown): number | null {
  if (!isObject(receipt)) return null;
  const number = (receipt as { receipt_number?: unknown }).receipt_number;
  return typeof number === "string" ? (parseReceiptNumber(number)?.sequence ?? null) : null;
}

function labelOf(receipt: unknown, fallback: string): string {
  const number = isObject(receipt) ? (receipt as { receipt_number?: unknown }).receipt_number : undefined;
  return typeof number === "string" && parseReceiptNumber(number) !== null ? number : fallback;
}

function range(from: number, to: number): string {
  return from === to ? ` ${from}` : `s ${from}–${to}`;
}

function isObject(value: unknown): value is Record<string, unknown> & AnySignedReceipt {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
