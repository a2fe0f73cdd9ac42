/**
 * Receipts issued before the event hash chain (no `event_chain`, no `events_summary[].event_hash`)
 * verify as they did before: signatures, links and numbers, alone and in a log that continues
 * with receipts that commit to their events; their evidence is not_evaluated, never invalid.
 * Moving a receipt between the formats breaks its signatures.
 */
import type { KeyObject } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateSigningKey } from "../../../src/receipts/ed25519.js";
import { evidencePasses, verifyReceiptEvidence } from "../../../src/receipts/evidence.js";
import {
  ChainVerificationSchema,
  PreEventChainSignedReceiptSchema,
  receiptFormatOf,
  SignedReceiptSchema,
  safeParseSignedReceipt,
} from "../../../src/receipts/schema.js";
import { verifyReceipt, verifyReceiptChain } from "../../../src/receipts/verify.js";
import {
  buildMixedChain,
  clone,
  HMAC_KEY,
  makeApprovalRecord,
  makeEventRecords,
  makeExportedEvents,
  makePreEventChainBody,
  signAsBefore,
} from "./fixtures.js";

const key = generateSigningKey();
const approvalKey = generateSigningKey();
const publicKeys = new Map<string, KeyObject>([[key.kid, key.publicKey]]);
const approvalKeys = new Map<string, KeyObject>([[approvalKey.kid, approvalKey.publicKey]]);
const allKeys = { hmacKey: HMAC_KEY, publicKeys, requireEd25519: true };
/** PR-1, PR-2 issued before the upgrade; PR-3, PR-4 after it. */
const mixed = buildMixedChain(2, 2, { signingKey: key });

/** A receipt of today's format turned into the pre-event-chain shape, its signatures kept. */
function downgraded(receipt: (typeof mixed)[number]): Record<string, unknown> {
  const {
    event_chain: _chain,
    events_summary,
    ...rest
  } = clone(receipt) as unknown as Record<string, unknown> & {
    events_summary: Array<Record<string, unknown>>;
  };
  return { ...rest, events_summary: events_summary.map(({ event_hash: _h, ...e }) => e) };
}

describe("the two receipt formats", () => {
  it("a receipt without event_chain is pre_event_chain and matches exactly the shape signed before", () => {
    const old = mixed[0]!;
    expect(receiptFormatOf(old)).toBe("pre_event_chain");
    expect(receiptFormatOf(mixed[2])).toBe("event_chain");
    expect(receiptFormatOf(null)).toBe("event_chain");
    expect(PreEventChainSignedReceiptSchema.safeParse(old).success).toBe(true);
    // today's strict schema alone rejects it: why old receipts verified invalid
    expect(SignedReceiptSchema.safeParse(old).success).toBe(false);
    expect(safeParseSignedReceipt(old)).toMatchObject({
      format: "pre_event_chain",
      result: { success: true },
    });
    expect(safeParseSignedReceipt(mixed[2])).toMatchObject({
      format: "event_chain",
      result: { success: true },
    });
  });

  it("a mixture of the formats matches neither schema", () => {
    // event_chain removed, event_hash items kept
    const { event_chain: _c, ...noChain } = clone(mixed[2]!) as unknown as Record<string, unknown>;
    const a = safeParseSignedReceipt(noChain);
    expect(a.format).toBe("pre_event_chain");
    expect(a.result.success).toBe(false);
    // event_chain added to an old receipt whose items carry no event_hash
    const withChain = {
      ...clone(mixed[0]!),
      event_chain: { format: "tollgate.event-chain.v1", event_count: 2, head_hash: null },
    };
    const b = safeParseSignedReceipt(withChain);
    expect(b.format).toBe("event_chain");
    expect(b.result.success).toBe(false);
    // the old format keeps the checks it had: a failed receipt must carry its failure
    const failed = signAsBefore({ ...makePreEventChainBody(1), status: "failed" });
    expect(safeParseSignedReceipt(failed).result.success).toBe(false);
  });
});

describe("verifying a log across the upgrade", () => {
  it("verifies old receipts, then new ones linked to them, valid and authenticated", () => {
    const result = verifyReceiptChain(mixed, allKeys);
    expect(ChainVerificationSchema.parse(result)).toEqual(result);
    expect(result.problems).toEqual([]);
    expect(result.overall_status).toBe("valid");
    expect(result.authenticated).toBe(true);
    expect(result.receipts.map((r) => r.receipt_format)).toEqual([
      "pre_event_chain",
      "pre_event_chain",
      "event_chain",
      "event_chain",
    ]);
    expect(
      result.receipts.map((r) => [r.well_formed, r.integrity.status, r.ed25519.status, r.chain.status]),
    ).toEqual([
      [true, "valid", "valid", "genesis"],
      [true, "valid", "valid", "valid"],
      [true, "valid", "valid", "valid"],
      [true, "valid", "valid", "valid"],
    ]);
    expect(result.receipts.map((r) => r.sequence)).toEqual([1, 2, 3, 4]);
  });

  it("an old receipt alone verifies against its predecessor as before", () => {
    expect(verifyReceipt(mixed[1]!, mixed[0]!, allKeys)).toMatchObject({
      overall_status: "valid",
      receipt_format: "pre_event_chain",
      well_formed: true,
      integrity: { status: "valid" },
      chain: { status: "valid" },
    });
  });

  it("an edited old receipt fails its signatures and breaks the next link; a deleted one is a gap", () => {
    const edited = clone(mixed);
    (edited[1] as { chain_name: string }).chain_name = "payroll";
    const r = verifyReceiptChain(edited, allKeys);
    expect(r.overall_status).toBe("invalid");
    expect(r.receipts.map((x) => [x.integrity.status, x.ed25519.status, x.chain.status])).toEqual([
      ["valid", "valid", "genesis"],
      ["invalid", "invalid", "valid"],
      ["valid", "valid", "broken"],
      ["valid", "valid", "valid"],
    ]);
    const gap = verifyReceiptChain([mixed[0]!, mixed[2]!, mixed[3]!], allKeys);
    expect(gap.receipts[1]!.chain.status).toBe("gap");
  });

  it("stripping event_chain from a new receipt breaks its signatures and the next link", () => {
    // the exact old shape: event_chain and every event_hash removed, signatures kept
    const forged = clone(mixed) as unknown[];
    forged[2] = downgraded(mixed[2]!);
    expect(PreEventChainSignedReceiptSchema.safeParse(forged[2]).success).toBe(true);
    const r = verifyReceiptChain(forged as typeof mixed, allKeys);
    expect(r.overall_status).toBe("invalid");
    expect(r.receipts[2]).toMatchObject({
      receipt_format: "pre_event_chain",
      well_formed: true,
      integrity: { status: "invalid" },
      ed25519: { status: "invalid" },
      overall_status: "invalid",
    });
    expect(r.receipts[3]!.chain.status).toBe("broken");
    expect(r.authenticated).toBe(false);

    // only event_chain removed: not even well-formed
    const { event_chain: _c, ...partial } = clone(mixed[2]!) as unknown as Record<string, unknown>;
    const p = verifyReceipt(partial as never, mixed[1]!, allKeys);
    expect(p).toMatchObject({
      well_formed: false,
      integrity: { status: "invalid" },
      overall_status: "invalid",
    });
    expect(p.problems.join(" ")).toContain("does not match the pre-event-chain receipt schema");
  });
});

describe("verifyReceiptEvidence", () => {
  it("a pre-event-chain receipt: events and approvals not_evaluated, with counts, and that passes", () => {
    const check = verifyReceiptEvidence(
      mixed[0],
      { events: makeExportedEvents(1), approvals: [makeApprovalRecord(1, approvalKey)] },
      approvalKeys,
      "PR-2026-00001",
    );
    expect(check).toEqual({
      receipt_format: "pre_event_chain",
      events: { status: "not_evaluated", event_count: 2, mismatches: [], problems: [] },
      approvals: { status: "not_evaluated", approval_count: 1, mismatches: [], problems: [] },
    });
    expect(evidencePasses(check)).toBe(true);
  });

  it("a receipt that commits to its events: valid when they match, invalid when one was altered", () => {
    const records = { events: makeEventRecords(3), approvals: [makeApprovalRecord(3, approvalKey)] };
    const ok = verifyReceiptEvidence(mixed[2], records, approvalKeys, "PR-2026-00003");
    expect(ok).toMatchObject({
      receipt_format: "event_chain",
      events: { status: "valid", event_count: 2 },
      approvals: { status: "valid", approval_count: 1 },
    });
    expect(evidencePasses(ok)).toBe(true);

    const altered = makeEventRecords(3);
    altered[1]!.payload = { amount_usd: 75 };
    const bad = verifyReceiptEvidence(
      mixed[2],
      { ...records, events: altered },
      approvalKeys,
      "PR-2026-00003",
    );
    expect(bad.events).toMatchObject({ status: "invalid", mismatches: [{ kind: "altered", sequence: 2 }] });
    expect(evidencePasses(bad)).toBe(false);
  });

  it("never lets a receipt that commits to its events pass with unevaluated evidence", () => {
    const check = verifyReceiptEvidence(
      mixed[2],
      { events: [], approvals: [] },
      approvalKeys,
      "PR-2026-00003",
    );
    expect(check.events.status).toBe("invalid"); // its two events are missing
    const forced = {
      ...check,
      events: { ...check.events, status: "not_evaluated" as const },
      approvals: { ...check.approvals, status: "not_evaluated" as const },
    };
    expect(evidencePasses(forced)).toBe(false);
  });
});
