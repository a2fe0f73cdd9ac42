/**
 * Offline verification of a receipt export (src/cli/export-format.ts) without the HMAC key:
 * every receipt's Ed25519 signature against a JWKS, hash links from the anchor, numbering
 * against the declared range, the organization of every receipt, the head, the service's
 * attestation of the manifest; each receipt's events recomputed into the event hash chain it
 * committed to and its approval records checked against it and their own signatures; and,
 * given a checkpoint, that the exported log still extends it. Receipts issued before the event
 * hash chain (no `event_chain`) get the same signature, link and numbering checks; their events
 * and approvals are reported not_evaluated, not invalid (src/receipts/evidence.ts). Pure: no I/O.
 */
import type { KeyObject } from "node:crypto";
import {
  type CheckpointLogStatus,
  CheckpointSchema,
  type CheckpointSignatureStatus,
  checkpointLogStatus,
  verifyCheckpointSignature,
} from "../receipts/checkpoint.js";
import { ed25519Verify, importPublicJwk } from "../receipts/ed25519.js";
import {
  type EvidenceStatus,
  evidencePasses,
  type ReceiptEvidenceCheck,
  verifyReceiptEvidence,
} from "../receipts/evidence.js";
import {
  type RevocationCheck,
  revocationOf,
  revocationsOf,
  revokedProblem,
} from "../receipts/key-validity.js";
import { parseReceiptNumber } from "../receipts/number.js";
import type {
  AnySignedReceipt,
  ChainVerification,
  Ed25519Status,
  LinkStatus,
  ReceiptFormat,
} from "../receipts/schema.js";
import { receiptPrincipals } from "../receipts/schema.js";
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
  /** pre_event_chain: issued before the event hash chain; its events and approvals are not_evaluated. */
  receipt_format: ReceiptFormat;
  overall_status: "valid" | "invalid";
  signature: Ed25519Status;
  link: LinkStatus;
  /** The chain's exported events against the receipt's event hash chain. */
  events: EvidenceStatus;
  /** Sequences of the events that do not match, ascending. */
  mismatched_events: number[];
  /** The chain's exported approval records against the receipt and their signatures. */
  approvals: EvidenceStatus;
  /** Ids of the approvals that do not match. */
  mismatched_approvals: string[];
  /**
   * Its Ed25519 key against the key set's revocations (ADR 0010): not_revoked;
   * signed_before_revocation (the key was revoked later: still valid); revoked (signed at or after
   * the revocation time: refused, the receipt is invalid).
   */
  key_revocation: RevocationCheck;
  /** The verified workload identities its signed events name: SPIFFE ID and pod (issue 27). */
  principals: { spiffe_id: string; pod_name: string | null }[];
  problems: string[];
}

/**
 * valid, invalid, or not_evaluated (a pre-event-chain receipt, which committed to no events or
 * approvals; or a receipt that cannot be read or repeats a chain, so its evidence cannot be matched).
 */
export type { EvidenceStatus };

/** Result of checking a checkpoint against the export. */
export interface CheckpointReport {
  organization: string;
  sequence: number;
  receipt_number: string | null;
  /** The checkpoint's Ed25519 signature against the receipt keys in use. */
  signature: CheckpointSignatureStatus;
  /** Whether the exported log still extends the checkpoint. */
  log: CheckpointLogStatus;
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
  /** Where the approval keys came from, and how many. */
  approval_keys_source: KeysSource;
  approval_key_count: number;
  event_count: number;
  approval_count: number;
  /** Receipts issued before the event hash chain (their events and approvals not evaluated). */
  pre_event_chain_receipt_count: number;
  /** Present when a checkpoint was given. */
  checkpoint: CheckpointReport | null;
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

/** Options of `verifyExport`. */
export interface VerifyExportOptions {
  /** Trusted approval keys (kid → key); default: the export's own approval_jwks. */
  approvalKeys?: ReadonlyMap<string, KeyObject>;
  approvalKeysSource?: KeysSource;
  /** A checkpoint kept earlier (CheckpointSchema, or an object with a `checkpoint` member). */
  checkpoint?: unknown;
  /** Revocation times of the receipt keys (kid → ms; key-validity.ts revocationsOf); default: the export's jwks. */
  revocations?: ReadonlyMap<string, number>;
  /** Revocation times of the approval keys; default: the export's approval_jwks. */
  approvalRevocations?: ReadonlyMap<string, number>;
}

/** Parses a checkpoint document (or a completion answer carrying one); throws ExportInputError. */
export function parseCheckpoint(doc: unknown) {
  const candidate =
    typeof doc === "object" && doc !== null && !("format" in doc) && "checkpoint" in doc
      ? (doc as { checkpoint: unknown }).checkpoint
      : doc;
  const parsed = CheckpointSchema.safeParse(candidate);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`);
    throw new ExportInputError(`not a Tollgate checkpoint (${issues.join("; ")})`);
  }
  return parsed.data;
}

/**
 * Verifies an export against `keys` (kid → Ed25519 public key of the receipt purpose), with its
 * events and approvals and, when given, a checkpoint.
 * @throws ExportInputError when `doc` is not an export, the export's approval keys are not an
 *   Ed25519 JWKS, or the checkpoint is not a checkpoint.
 */
export function verifyExport(
  doc: unknown,
  keys: ReadonlyMap<string, KeyObject>,
  keysSource: KeysSource,
  opts: VerifyExportOptions = {},
): ExportReport {
  const exp = parseExport(doc);
  const approvalKeys = opts.approvalKeys ?? importJwks(exp.approval_jwks);
  const revocations = opts.revocations ?? revocationsOf(exp.jwks);
  const approvalRevocations = opts.approvalRevocations ?? revocationsOf(exp.approval_jwks);
  const checkpoint = opts.checkpoint === undefined ? null : parseCheckpoint(opts.checkpoint);
  const receipts = exp.receipts as AnySignedReceipt[];
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
  const attestationRevokedAt = attestation.kid === null ? undefined : revocations.get(attestation.kid);
  if (
    attestationRevokedAt !== undefined &&
    revocationOf(attestationRevokedAt, exp.exported_at) === "revoked"
  ) {
    problems.push(revokedProblem("the export's attestation", attestation.kid!, attestationRevokedAt));
  }
  if (attestation.status === "invalid") problems.push("the export's attestation does not match its manifest");
  if (attestation.status === "missing") problems.push("the export carries no attestation");
  if (attestation.status === "unknown_key") problems.push("the export is attested with an untrusted key");

  const evidence = checkEvidence(exp, receipts, chain, approvalKeys, approvalRevocations);
  const revocationChecks = receipts.map((r, i) => {
    const kid = (r as { ed25519?: { kid?: unknown } | null } | null)?.ed25519?.kid;
    const revokedAt = typeof kid === "string" ? revocations.get(kid) : undefined;
    if (revokedAt === undefined) return { check: "not_revoked" as const, problem: null };
    const check = revocationOf(revokedAt, (r as { completed_at?: unknown }).completed_at);
    const name = chain.receipts[i]?.receipt_number ?? `receipt #${i + 1}`;
    return { check, problem: check === "revoked" ? revokedProblem(name, kid as string, revokedAt) : null };
  });
  const evidenceProblems = evidence.perReceipt.map((e, i) => [
    ...(revocationChecks[i]!.problem ? [revocationChecks[i]!.problem!] : []),
    ...(e.events?.problems ?? []),
    ...(e.approvals?.problems ?? []),
  ]);
  // receipt problems (its own, then its evidence's) in order, then everything export-level
  const receiptProblems = chain.receipts.flatMap((c, i) => [...c.problems, ...evidenceProblems[i]!]);
  const chainLevel = chain.problems.slice(chain.receipts.reduce((n, c) => n + c.problems.length, 0));
  problems.splice(0, chain.problems.length, ...receiptProblems, ...chainLevel);
  problems.push(...evidence.problems);
  const checkpointReport =
    checkpoint === null ? null : checkCheckpoint(checkpoint, exp, receipts, keys, revocations);
  if (checkpointReport) problems.push(...checkpointReport.problems);

  return {
    overall_status: problems.length === 0 && chain.overall_status === "valid" ? "valid" : "invalid",
    organization: exp.organization,
    from_sequence: exp.from_sequence,
    to_sequence: exp.to_sequence,
    receipt_count: receipts.length,
    keys_source: keysSource,
    key_count: keys.size,
    attestation,
    approval_keys_source: opts.approvalKeys ? (opts.approvalKeysSource ?? "file") : "export",
    approval_key_count: approvalKeys.size,
    event_count: exp.events.length,
    approval_count: exp.approvals.length,
    pre_event_chain_receipt_count: chain.receipts.filter((c) => c.receipt_format === "pre_event_chain")
      .length,
    checkpoint: checkpointReport,
    receipts: chain.receipts.map((c, i) => {
      const e = evidence.perReceipt[i]!;
      const own = evidenceProblems[i]!;
      const evidenceOk = e.events === null || evidencePasses(e);
      return {
        position: i + 1,
        receipt_number: c.receipt_number,
        receipt_id: c.receipt_id,
        receipt_format: c.receipt_format,
        overall_status: c.overall_status === "valid" && own.length === 0 && evidenceOk ? "valid" : "invalid",
        signature: c.ed25519.status,
        link: c.chain.status,
        events: e.events?.status ?? "not_evaluated",
        mismatched_events: e.events
          ? [...new Set(e.events.mismatches.flatMap((m) => (m.sequence === null ? [] : [m.sequence])))].sort(
              (a, b) => a - b,
            )
          : [],
        approvals: e.approvals?.status ?? "not_evaluated",
        mismatched_approvals: e.approvals
          ? [
              ...new Set(
                e.approvals.mismatches.flatMap((m) => (m.approval_id === null ? [] : [m.approval_id])),
              ),
            ]
          : [],
        key_revocation: revocationChecks[i]!.check,
        principals: receiptPrincipals(receipts[i]).map((p) => ({
          spiffe_id: p.spiffe_id,
          pod_name: p.pod_name,
        })),
        problems: [...c.problems, ...own],
      };
    }),
    problems,
  };
}

/** An item's chain_id, or null. */
function chainIdOf(item: unknown): string | null {
  const id = (item as { chain_id?: unknown } | null)?.chain_id;
  return typeof id === "string" ? id : null;
}

/** Groups items by chain_id, keeping their order. */
function byChain(items: readonly unknown[]): Map<string | null, unknown[]> {
  const groups = new Map<string | null, unknown[]>();
  for (const item of items) {
    const id = chainIdOf(item);
    const list = groups.get(id) ?? [];
    list.push(item);
    groups.set(id, list);
  }
  return groups;
}

/**
 * Each receipt's events and approvals (matched by the receipt's chain_id) checked against it
 * (src/receipts/evidence.ts: not_evaluated for a pre-event-chain receipt, whose items are still
 * claimed by it); items that belong to no exported receipt, and chains listed out of receipt
 * order, are export-level problems. Problems of receipts are returned per receipt, the rest in
 * `problems`. A receipt without a chain_id, or repeating another's, gets null evidence.
 */
function checkEvidence(
  exp: ReceiptExport,
  receipts: readonly AnySignedReceipt[],
  chain: ChainVerification,
  approvalKeys: ReadonlyMap<string, KeyObject>,
  approvalRevocations: ReadonlyMap<string, number>,
): {
  perReceipt: Array<ReceiptEvidenceCheck | { events: null; approvals: null }>;
  problems: string[];
} {
  const events = byChain(exp.events);
  const approvals = byChain(exp.approvals);
  const problems: string[] = [];
  const claimed = new Set<string | null>();
  const perReceipt = receipts.map((receipt, index) => {
    const label = chain.receipts[index]?.receipt_number ?? `receipt #${index + 1}`;
    const chainId = chainIdOf(receipt);
    if (chainId === null || claimed.has(chainId)) return { events: null, approvals: null };
    claimed.add(chainId);
    return verifyReceiptEvidence(
      receipt,
      { events: events.get(chainId) ?? [], approvals: approvals.get(chainId) ?? [] },
      approvalKeys,
      label,
      approvalRevocations,
    );
  });
  for (const [kind, groups] of [
    ["event", events],
    ["approval", approvals],
  ] as const) {
    for (const [chainId, items] of groups) {
      if (claimed.has(chainId)) continue;
      problems.push(
        `${items.length} ${kind}${items.length === 1 ? "" : "s"} of chain ${chainId ?? "(none)"} belong${items.length === 1 ? "s" : ""} to no receipt of the export: inserted`,
      );
    }
  }
  const order = new Map(receipts.map((r, i) => [chainIdOf(r), i]));
  for (const [kind, items] of [
    ["events", exp.events],
    ["approvals", exp.approvals],
  ] as const) {
    let last = -1;
    for (const item of items) {
      const position = order.get(chainIdOf(item));
      if (position === undefined) continue;
      if (position < last) {
        problems.push(`the export lists the ${kind} of its chains out of receipt order: reordered`);
        break;
      }
      last = position;
    }
  }
  return { perReceipt, problems };
}

/** A checkpoint against the export: its signature by a receipt key, and whether the log extends it. */
function checkCheckpoint(
  checkpoint: ReturnType<typeof parseCheckpoint>,
  exp: ReceiptExport,
  receipts: readonly AnySignedReceipt[],
  keys: ReadonlyMap<string, KeyObject>,
  revocations: ReadonlyMap<string, number>,
): CheckpointReport {
  const signature = verifyCheckpointSignature(checkpoint, keys);
  const log = checkpointLogStatus(checkpoint, {
    organization: exp.organization,
    latestSequence: exp.latest_sequence,
    hashAt: (sequence) => {
      if (sequence === exp.from_sequence - 1 && exp.anchor) return exp.anchor.receipt_hash;
      if (sequence < exp.from_sequence || sequence > exp.to_sequence) return undefined;
      const receipt = receipts.find((r) => sequenceOf(r) === sequence);
      if (receipt === undefined) return null;
      try {
        return receiptHash(receipt);
      } catch {
        return "unhashable";
      }
    },
  });
  const problems = [...log.problems];
  if (signature === "invalid") problems.push("the checkpoint's signature does not match its contents");
  if (signature === "unknown_key") problems.push("the checkpoint is signed with an untrusted key");
  const revokedAt = revocations.get(checkpoint.kid);
  if (revokedAt !== undefined && revocationOf(revokedAt, checkpoint.issued_at) === "revoked") {
    problems.push(revokedProblem("the checkpoint", checkpoint.kid, revokedAt));
  }
  return {
    organization: checkpoint.organization,
    sequence: checkpoint.sequence,
    receipt_number: checkpoint.receipt_number,
    signature,
    log: log.status,
    problems,
  };
}
