/**
 * Offline verification of a receipt export (src/cli/export-format.ts) without the HMAC key:
 * every receipt's Ed25519 signature against a JWKS, hash links from the anchor, numbering
 * against the declared range, the organization of every receipt, the head, and the service's
 * attestation of the manifest. Pure: no I/O.
 */
import type { KeyObject } from "node:crypto";
import { ed25519Verify, importPublicJwk } from "../receipts/ed25519.js";
import { parseReceiptNumber } from "../receipts/number.js";
import type { ChainVerification, Ed25519Status, LinkStatus, SignedReceipt } from "../receipts/schema.js";
import { receiptHash } from "../receipts/sign.js";
import { verifyReceiptChain } from "../receipts/verify.js";
import { exportSigningInput, type ReceiptExport, ReceiptExportSchema } from "./export-format.js";

/** Where the verifier's public keys came from. */
export const KeysSource = { file: "file", url: "url", export: "export" } as const;
export type KeysSource = (typeof KeysSource)[keyof typeof KeysSource];

/** Status of the export's manifest attestation. */
export type AttestationStatus = "valid" | "invalid" | "missing" | "unknown_key";

/** Result of one receipt. */
export interface ReceiptReport {
  /** 1-based position in the export. */
  position: number;
  receipt_number: string | null;
  receipt_id: string | null;
  overall_status: "valid" | "invalid";
  signature: Ed25519Status;
  link: LinkStatus;
  problems: string[];
}

/** Result of verifying one export. */
export interface ExportReport {
  overall_status: "valid" | "invalid";
  organization: string;
  from_sequence: number;
  to_sequence: number;
  receipt_count: number;
  keys_source: KeysSource;
  key_count: number;
  attestation: { status: AttestationStatus; kid: string | null };
  receipts: ReceiptReport[];
  /** Every problem: receipt problems in order, then export-level ones. */
  problems: string[];
}

/** The input is not a receipt export, or the keys are not an Ed25519 JWKS (exit code 2). */
export class ExportInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExportInputError";
  }
}

/** Parses an export document; throws ExportInputError naming the first wrong fields. */
export function parseExport(doc: unknown): ReceiptExport {
  const parsed = ReceiptExportSchema.safeParse(doc);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    throw new ExportInputError(`not a Tollgate receipt export (${issues.join("; ")})`);
  }
  return parsed.data;
}

/** Imports a JWKS into kid → key; throws ExportInputError when a key is not an Ed25519 public JWK. */
export function importJwks(jwks: unknown): Map<string, KeyObject> {
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new ExportInputError('the keys are not a JWKS ({ "keys": [...] })');
  const map = new Map<string, KeyObject>();
  keys.forEach((jwk, index) => {
    try {
      const { kid, publicKey } = importPublicJwk(jwk);
      map.set(kid, publicKey);
    } catch (err) {
      throw new ExportInputError(`keys[${index}]: ${(err as Error).message}`);
    }
  });
  return map;
}

function sequenceOf(receipt: unknown): number | null {
  const n = (receipt as { receipt_number?: unknown } | null)?.receipt_number;
  return typeof n === "string" ? (parseReceiptNumber(n)?.sequence ?? null) : null;
}

function attestationOf(
  exp: ReceiptExport,
  keys: ReadonlyMap<string, KeyObject>,
): ExportReport["attestation"] {
  if (!exp.attestation) return { status: "missing", kid: null };
  const key = keys.get(exp.attestation.kid);
  if (!key) return { status: "unknown_key", kid: exp.attestation.kid };
  const input = exportSigningInput({ ...exp, receipt_count: exp.receipts.length });
  return {
    status: ed25519Verify(input, exp.attestation.signature, key) ? "valid" : "invalid",
    kid: exp.attestation.kid,
  };
}

/**
 * Verifies an export against `keys` (kid → Ed25519 public key).
 * @throws ExportInputError when `doc` is not an export.
 */
export function verifyExport(
  doc: unknown,
  keys: ReadonlyMap<string, KeyObject>,
  keysSource: KeysSource,
): ExportReport {
  const exp = parseExport(doc);
  const receipts = exp.receipts as SignedReceipt[];
  const chain: ChainVerification = verifyReceiptChain(receipts, {
    publicKeys: keys,
    requireEd25519: true,
    ...(exp.anchor ? { anchor: exp.anchor } : {}),
  });
  const problems = [...chain.problems];

  receipts.forEach((r, i) => {
    const org = (r as { organization?: unknown } | null)?.organization;
    if (org !== exp.organization) {
      problems.push(
        `${chain.receipts[i]?.receipt_number ?? `receipt #${i + 1}`} belongs to another organization than the export`,
      );
    }
  });
  const expectedCount = exp.to_sequence - exp.from_sequence + 1;
  const first = receipts.length > 0 ? sequenceOf(receipts[0]) : null;
  const last = receipts.length > 0 ? sequenceOf(receipts.at(-1)) : null;
  if (
    receipts.length !== expectedCount ||
    (receipts.length > 0 && (first !== exp.from_sequence || last !== exp.to_sequence))
  ) {
    problems.push(
      `the export declares sequences ${exp.from_sequence}–${exp.to_sequence} (${expectedCount} receipts) but holds ${receipts.length}${first !== null ? ` (sequences ${first}–${last})` : ""}`,
    );
  }
  if (exp.from_sequence > 1 && exp.anchor === null) {
    problems.push(
      `the export starts at sequence ${exp.from_sequence} but has no anchor for the receipt before it`,
    );
  }
  if (exp.anchor && sequenceOf(exp.anchor) !== exp.from_sequence - 1) {
    problems.push(
      `the anchor ${exp.anchor.receipt_number} is not the receipt before sequence ${exp.from_sequence}`,
    );
  }
  const tail = receipts.at(-1);
  if (exp.head === null) {
    if (tail !== undefined) problems.push("the export names no head receipt but holds receipts");
  } else {
    let tailHash: string | null = null;
    try {
      tailHash = tail === undefined ? null : receiptHash(tail);
    } catch {
      tailHash = null;
    }
    const tailNumber = (tail as { receipt_number?: unknown } | undefined)?.receipt_number;
    if (tailHash !== exp.head.receipt_hash || tailNumber !== exp.head.receipt_number) {
      problems.push(`the last receipt of the export is not its head ${exp.head.receipt_number}`);
    }
  }
  const attestation = attestationOf(exp, keys);
  if (attestation.status === "invalid") problems.push("the export's attestation does not match its manifest");
  if (attestation.status === "missing") problems.push("the export carries no attestation");
  if (attestation.status === "unknown_key") problems.push("the export is attested with an untrusted key");

  return {
    overall_status: problems.length === 0 && chain.overall_status === "valid" ? "valid" : "invalid",
    organization: exp.organization,
    from_sequence: exp.from_sequence,
    to_sequence: exp.to_sequence,
    receipt_count: receipts.length,
    keys_source: keysSource,
    key_count: keys.size,
    attestation,
    receipts: chain.receipts.map((c, i) => ({
      position: i + 1,
      receipt_number: c.receipt_number,
      receipt_id: c.receipt_id,
      overall_status: c.overall_status,
      signature: c.ed25519.status,
      link: c.chain.status,
      problems: c.problems,
    })),
    problems,
  };
}
