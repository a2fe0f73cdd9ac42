/**
 * Approval records against their receipt and their Ed25519 attestations
 * (src/receipts/approval-record.ts): an edited, deleted, inserted, reordered, unsigned or
 * foreign-key approval is reported by approval id.
 */
import { describe, expect, it } from "vitest";
import {
  type ApprovalRecord,
  approvalAttestationText,
  attestationOfRecord,
  verifyApprovalRecords,
} from "../../../src/receipts/approval-record.js";
import { ed25519Sign, generateSigningKey } from "../../../src/receipts/ed25519.js";
import type { ReceiptApproval } from "../../../src/receipts/schema.js";
import { clone, makeApprovalRecord, makeBody, uuid } from "./fixtures.js";

const key = generateSigningKey();
const keys = new Map([[key.kid, key.publicKey]]);
const body = makeBody(1);
const record = makeApprovalRecord(1, key);

/** Signs a record's facts with the test key, as the service does at resolution. */
function signed(r: ApprovalRecord): ApprovalRecord {
  const attestation = attestationOfRecord({ ...r, kid: key.kid })!;
  return { ...r, kid: key.kid, signature: ed25519Sign(approvalAttestationText(attestation), key.privateKey) };
}

/** A receipt with a second approval (on another event), and the records of both. */
function twoApprovals() {
  const second: ReceiptApproval = {
    ...clone(body.approvals[0]!),
    approval_id: uuid(2, 3),
    action_event_id: uuid(2, 4),
    exception: null,
  };
  const receipt = { chain_id: body.chain_id, approvals: [body.approvals[0]!, second] };
  const other = signed({ ...clone(record), approval_id: uuid(2, 3), event_id: uuid(2, 4), exception: null });
  return { receipt, records: [record, other] };
}

const check = (records: unknown[], receipt: { chain_id: string; approvals: ReceiptApproval[] } = body) =>
  verifyApprovalRecords(receipt, records, keys, "PR-2026-00001");

describe("verifyApprovalRecords", () => {
  it("accepts signed records matching the receipt", () => {
    expect(check([record])).toEqual({ status: "valid", approval_count: 1, mismatches: [], problems: [] });
    const { receipt, records } = twoApprovals();
    expect(check(records, receipt).status).toBe("valid");
  });

  it.each<[string, (r: ApprovalRecord) => void, string[]]>([
    ["notes", (r) => (r.notes = "rubber-stamped"), ["invalid_signature", "altered"]],
    ["decided_by", (r) => (r.decided_by = "mallory@example.com"), ["invalid_signature", "altered"]],
    ["status", (r) => (r.status = "denied"), ["invalid_signature", "altered"]],
    ["decided_at", (r) => (r.decided_at = "2026-01-15T12:04:00.000Z"), ["invalid_signature", "altered"]],
    ["exception", (r) => (r.exception = null), ["invalid_signature", "altered"]],
    ["final decision", (r) => (r.policy_decision = "deny"), ["invalid_signature"]],
    ["requested_at", (r) => (r.requested_at = "2026-01-15T11:00:00.000Z"), ["invalid_signature"]],
    [
      "signature",
      (r) =>
        (r.signature = `${r.signature!.slice(0, 10)}${r.signature![10] === "A" ? "B" : "A"}${r.signature!.slice(11)}`),
      ["invalid_signature"],
    ],
  ])("an altered %s is reported by id", (_name, mutate, kinds) => {
    const tampered = clone(record);
    mutate(tampered);
    expect(tampered).not.toEqual(record);
    const r = check([tampered]);
    expect(r.status).toBe("invalid");
    expect(r.mismatches).toEqual(kinds.map((kind) => ({ kind, approval_id: record.approval_id })));
    expect(r.problems.join(" ")).toContain(`approval ${record.approval_id} of PR-2026-00001`);
  });

  it("an edited record re-signed with a key outside the trusted set is unknown_key", () => {
    const rogue = generateSigningKey();
    const forged = makeApprovalRecord(1, rogue);
    expect(check([forged]).mismatches).toEqual([{ kind: "unknown_key", approval_id: record.approval_id }]);
  });

  it("a deleted approval is missing, an inserted one unexpected, a duplicate unexpected", () => {
    expect(check([]).mismatches).toEqual([{ kind: "missing", approval_id: record.approval_id }]);
    const { records } = twoApprovals();
    expect(check(records).mismatches).toEqual([{ kind: "unexpected", approval_id: uuid(2, 3) }]);
    expect(check([record, record]).mismatches).toEqual([
      { kind: "unexpected", approval_id: record.approval_id },
    ]);
  });

  it("reordered approvals are out_of_order", () => {
    const { receipt, records } = twoApprovals();
    const r = check([records[1], records[0]], receipt);
    expect(r.mismatches).toEqual([{ kind: "out_of_order", approval_id: record.approval_id }]);
  });

  it("an unsigned record, a malformed one and another chain's are reported", () => {
    expect(check([{ ...record, kid: null, signature: null }]).mismatches).toEqual([
      { kind: "unsigned", approval_id: record.approval_id },
    ]);
    expect(check([{ approval_id: record.approval_id }]).mismatches.map((m) => m.kind)).toEqual([
      "malformed",
      "missing",
    ]);
    expect(
      check([record], { chain_id: uuid(9, 2), approvals: body.approvals }).mismatches.map((m) => m.kind),
    ).toEqual(["unexpected", "missing"]);
  });

  it("without keys compares with the receipt only", () => {
    const tampered = {
      ...clone(record),
      signature: record.signature!.replace(/^./, record.signature![0] === "A" ? "B" : "A"),
    };
    expect(verifyApprovalRecords(body, [tampered], null, "r").status).toBe("valid");
  });
});
