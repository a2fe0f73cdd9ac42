/**
 * Checkpoints (src/receipts/checkpoint.ts): signed with a receipt key over canonical JSON,
 * strict shape, and the comparison with a log — extended, truncated, missing, forked,
 * not_covered, other_organization.
 */
import { describe, expect, it } from "vitest";
import {
  type Checkpoint,
  CheckpointSchema,
  checkpointLogStatus,
  checkpointSigningInput,
  type LogView,
  signCheckpoint,
  verifyCheckpointSignature,
} from "../../../src/receipts/checkpoint.js";
import { generateSigningKey } from "../../../src/receipts/ed25519.js";

const key = generateSigningKey();
const keys = new Map([[key.kid, key.publicKey]]);
const hash = (c: string) => `sha256:${c.repeat(64)}`;
const cp = signCheckpoint(
  {
    organization: "acme",
    sequence: 5,
    receipt_number: "PR-2026-00005",
    receipt_hash: hash("a"),
    issued_at: "2026-03-01T00:00:00.000Z",
  },
  key,
);

/** A log of `latest` receipts whose hashes are hash(letter) by sequence. */
const log = (latest: number, hashes: Record<number, string | null> = {}, organization = "acme"): LogView => ({
  organization,
  latestSequence: latest,
  hashAt: (sequence) => (sequence in hashes ? hashes[sequence] : undefined),
});

describe("checkpoints", () => {
  it("are signed over the canonical JSON of every field but the signature", () => {
    expect(cp).toMatchObject({ format: "tollgate.receipt-checkpoint.v1", kid: key.kid, sequence: 5 });
    expect(CheckpointSchema.parse(cp)).toEqual(cp);
    expect(JSON.parse(checkpointSigningInput(cp))).not.toHaveProperty("signature");
    expect(verifyCheckpointSignature(cp, keys)).toBe("valid");
  });

  it.each<[string, Partial<Checkpoint>]>([
    ["sequence", { sequence: 4, receipt_number: "PR-2026-00004" }],
    ["hash", { receipt_hash: hash("b") }],
    ["organization", { organization: "globex" }],
    ["issued_at", { issued_at: "2027-01-01T00:00:00.000Z" }],
  ])("an edited %s fails the signature", (_name, change) => {
    expect(verifyCheckpointSignature({ ...cp, ...change }, keys)).toBe("invalid");
  });

  it("a kid outside the trusted keys is unknown_key", () => {
    const other = generateSigningKey();
    expect(verifyCheckpointSignature(cp, new Map([[other.kid, other.publicKey]]))).toBe("unknown_key");
  });

  it("the shape ties number, hash and sequence together", () => {
    expect(CheckpointSchema.safeParse({ ...cp, receipt_number: "PR-2026-00004" }).success).toBe(false);
    expect(CheckpointSchema.safeParse({ ...cp, receipt_hash: null }).success).toBe(false);
    expect(CheckpointSchema.safeParse({ ...cp, extra: 1 }).success).toBe(false);
    const empty = signCheckpoint(
      {
        organization: "acme",
        sequence: 0,
        receipt_number: null,
        receipt_hash: null,
        issued_at: cp.issued_at,
      },
      key,
    );
    expect(CheckpointSchema.safeParse(empty).success).toBe(true);
    expect(checkpointLogStatus(empty, log(0)).status).toBe("extended");
  });

  it.each<[string, LogView, string]>([
    ["extended", log(9, { 5: hash("a") }), ""],
    ["truncated", log(3, {}), "the log ends at sequence 3, before the checkpoint's PR-2026-00005"],
    ["missing", log(9, { 5: null }), "is missing from the log"],
    ["forked", log(5, { 5: hash("c") }), "the log was rewritten"],
    ["not_covered", log(9, {}), "verify a range that does"],
    ["other_organization", log(9, { 5: hash("a") }, "globex"), "not globex"],
  ])("against a log: %s", (status, view, problem) => {
    const r = checkpointLogStatus(cp, view);
    expect(r.status).toBe(status);
    if (problem) expect(r.problems.join()).toContain(problem);
    else expect(r.problems).toEqual([]);
  });
});
