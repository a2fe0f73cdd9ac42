import type { KeyObject } from "node:crypto";
import { describe, expect, it } from "vitest";
import { exportJwks, generateSigningKey } from "../../../src/receipts/ed25519.js";
import { formatReceiptNumber } from "../../../src/receipts/number.js";
import { ChainVerificationSchema, type SignedReceipt } from "../../../src/receipts/schema.js";
import { hmacSignature, receiptHash, signReceipt } from "../../../src/receipts/sign.js";
import {
  receiptAnchor,
  verifyReceipt,
  verifyReceiptChain,
  verifyReceiptLink,
} from "../../../src/receipts/verify.js";
import { buildChain, clone, HMAC_KEY, makeBody } from "./fixtures.js";

const key = generateSigningKey();
const publicKeys = new Map<string, KeyObject>([[key.kid, key.publicKey]]);
const allKeys = { hmacKey: HMAC_KEY, publicKeys };
const chain = buildChain(5, { signingKey: key });

const statuses = (result: ReturnType<typeof verifyReceiptChain>, check: "integrity" | "ed25519" | "chain") =>
  result.receipts.map((r) => r[check].status);

/** Asserts the spec's privacy rule: problems never carry hashes, HMACs or signatures. */
function expectNoSecrets(problems: string[], receipts: SignedReceipt[]): void {
  const text = problems.join("\n");
  expect(text).not.toMatch(/sha256:|hmac-sha256:|[0-9a-f]{32}/);
  for (const receipt of receipts) {
    if (receipt?.ed25519) expect(text).not.toContain(receipt.ed25519.signature);
  }
}

describe("verifyReceiptChain", () => {
  it("accepts an intact chain of 5 with every check evaluated", () => {
    const result = verifyReceiptChain(chain, allKeys);
    expect(ChainVerificationSchema.parse(result)).toEqual(result);
    expect(result.overall_status).toBe("valid");
    expect(result.authenticated).toBe(true);
    expect(result.problems).toEqual([]);
    expect(statuses(result, "integrity")).toEqual(Array(5).fill("valid"));
    expect(statuses(result, "ed25519")).toEqual(Array(5).fill("valid"));
    expect(statuses(result, "chain")).toEqual(["genesis", "valid", "valid", "valid", "valid"]);
    expect(result.receipts.map((r) => r.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(result.receipts[0]).toMatchObject({
      receipt_id: chain[0]!.receipt_id,
      receipt_number: "PR-2026-00001",
      well_formed: true,
      ed25519: { kid: key.kid },
    });
  });

  it("accepts an exported (JSON round-tripped) chain with a JWKS", () => {
    const result = verifyReceiptChain(clone(chain), { publicKeys: exportJwks([generateSigningKey(), key]) });
    expect(result.overall_status).toBe("valid");
    expect(statuses(result, "integrity")).toEqual(Array(5).fill("not_evaluated"));
    expect(statuses(result, "ed25519")).toEqual(Array(5).fill("valid"));
    expect(result.authenticated).toBe(true);
  });

  it("with the HMAC key only (the service's view) is valid and authenticated", () => {
    const result = verifyReceiptChain(chain, { hmacKey: HMAC_KEY });
    expect(result.overall_status).toBe("valid");
    expect(result.authenticated).toBe(true);
    expect(statuses(result, "ed25519")).toEqual(Array(5).fill("not_evaluated"));
  });

  it("without keys is valid but not authenticated", () => {
    const result = verifyReceiptChain(chain);
    expect(result.overall_status).toBe("valid");
    expect(result.authenticated).toBe(false);
    expect(statuses(result, "integrity")).toEqual(Array(5).fill("not_evaluated"));
  });

  it("detects a tampered body: integrity and signature of that receipt, link of the next", () => {
    const tampered = clone(chain);
    tampered[2]!.cumulative_metrics.financial_exposure_usd = 1;
    const result = verifyReceiptChain(tampered, allKeys);
    expect(result.overall_status).toBe("invalid");
    expect(statuses(result, "integrity")).toEqual(["valid", "valid", "invalid", "valid", "valid"]);
    expect(statuses(result, "ed25519")).toEqual(["valid", "valid", "invalid", "valid", "valid"]);
    expect(statuses(result, "chain")).toEqual(["genesis", "valid", "valid", "broken", "valid"]);
    expect(result.receipts.map((r) => r.overall_status)).toEqual([
      "valid",
      "valid",
      "invalid",
      "invalid",
      "valid",
    ]);
    expect(result.problems.join("\n")).toContain("PR-2026-00003 fails its integrity check");
    expect(result.problems.join("\n")).toContain("PR-2026-00004 does not match PR-2026-00003");
    expectNoSecrets(result.problems, tampered);
  });

  it("detects a re-signed forgery: the HMAC fails, and an attacker's Ed25519 key is unknown", () => {
    const attacker = generateSigningKey();
    const forged = clone(chain);
    forged[1] = signReceipt(
      { ...makeBody(2, receiptHash(chain[0]!)), summary: "nothing happened" },
      { hmacKey: Buffer.alloc(32, 1), ed25519: attacker },
    );
    const result = verifyReceiptChain(forged, allKeys);
    expect(result.overall_status).toBe("invalid");
    expect(result.receipts[1]).toMatchObject({
      integrity: { status: "invalid" },
      ed25519: { status: "unknown_key", kid: attacker.kid },
      chain: { status: "valid" },
    });
    expect(result.receipts[2]!.chain.status).toBe("broken");
    expect(result.problems).toContain("PR-2026-00002 is signed with an untrusted Ed25519 key");
  });

  it("without keys cannot tell a wholly rewritten chain from the real one", () => {
    const rewritten = buildChain(5, { hmacKey: Buffer.alloc(32, 1) }, (sequence, previous) =>
      makeBody(sequence, previous, { summary: "rewritten" }),
    );
    const offline = verifyReceiptChain(rewritten);
    expect(offline.overall_status).toBe("valid");
    expect(offline.authenticated).toBe(false);
    expect(verifyReceiptChain(rewritten, { publicKeys, requireEd25519: true }).overall_status).toBe(
      "invalid",
    );
    expect(verifyReceiptChain(rewritten, { hmacKey: HMAC_KEY }).overall_status).toBe("invalid");
  });

  it("detects a deleted receipt as a gap at the next one", () => {
    const result = verifyReceiptChain([chain[0]!, chain[1]!, chain[3]!, chain[4]!], allKeys);
    expect(result.overall_status).toBe("invalid");
    expect(statuses(result, "chain")).toEqual(["genesis", "valid", "gap", "valid"]);
    expect(statuses(result, "integrity")).toEqual(Array(4).fill("valid"));
    expect(result.problems).toEqual([
      "receipts between PR-2026-00002 and PR-2026-00004 (sequence 3) are missing",
    ]);
  });

  it("names the whole range when several receipts are deleted", () => {
    const result = verifyReceiptChain([chain[0]!, chain[4]!], allKeys);
    expect(result.problems).toEqual([
      "receipts between PR-2026-00001 and PR-2026-00005 (sequences 2–4) are missing",
    ]);
  });

  it("cannot see a deleted last receipt: the caller compares the last number it expects", () => {
    const result = verifyReceiptChain(chain.slice(0, 4), allKeys);
    expect(result.overall_status).toBe("valid");
    expect(result.receipts.at(-1)!.sequence).toBe(4);
  });

  it("detects two swapped receipts", () => {
    const swapped = [chain[0]!, chain[2]!, chain[1]!, chain[3]!, chain[4]!];
    const result = verifyReceiptChain(swapped, allKeys);
    expect(result.overall_status).toBe("invalid");
    expect(statuses(result, "chain")).toEqual(["genesis", "gap", "broken", "gap", "valid"]);
    expect(result.problems).toContain(
      "PR-2026-00002 (sequence 2) follows PR-2026-00003 (sequence 3): out of order or duplicated",
    );
    expectNoSecrets(result.problems, swapped);
  });

  it("detects swapped contents under kept receipt numbers as broken links", () => {
    // An attacker renumbers two receipts: their signatures and the links both fail.
    const renumbered = clone(chain);
    [renumbered[1]!.receipt_number, renumbered[2]!.receipt_number] = ["PR-2026-00003", "PR-2026-00002"];
    const result = verifyReceiptChain(
      [renumbered[0]!, renumbered[2]!, renumbered[1]!, renumbered[3]!],
      allKeys,
    );
    expect(statuses(result, "integrity")).toEqual(["valid", "invalid", "invalid", "valid"]);
    expect(statuses(result, "chain")).toEqual(["genesis", "broken", "broken", "broken"]);
  });

  it("reports a duplicated receipt", () => {
    const result = verifyReceiptChain([chain[0]!, chain[1]!, chain[1]!], allKeys);
    expect(statuses(result, "chain")).toEqual(["genesis", "valid", "broken"]);
    expect(result.problems).toContain("PR-2026-00002 has the same receipt_id as PR-2026-00002");
    expect(result.problems).toContain("PR-2026-00002 has the same chain_id as PR-2026-00002");
  });

  it("follows the sequence across years", () => {
    const years = buildChain(3, { signingKey: key }, (sequence, previous) =>
      makeBody(sequence, previous, {
        receipt_number: formatReceiptNumber(sequence < 3 ? 2026 : 2027, sequence),
      }),
    );
    expect(years.map((r) => r.receipt_number)).toEqual(["PR-2026-00001", "PR-2026-00002", "PR-2027-00003"]);
    expect(verifyReceiptChain(years, allKeys).overall_status).toBe("valid");
  });

  it("treats a missing Ed25519 signature as acceptable unless required", () => {
    const unsigned = buildChain(3);
    const lenient = verifyReceiptChain(unsigned, allKeys);
    expect(lenient.overall_status).toBe("valid");
    expect(statuses(lenient, "ed25519")).toEqual(["missing", "missing", "missing"]);
    const strict = verifyReceiptChain(unsigned, { ...allKeys, requireEd25519: true });
    expect(strict.overall_status).toBe("invalid");
    expect(strict.problems[0]).toBe("PR-2026-00001 has no Ed25519 signature");
  });

  it("reports a malformed Ed25519 signature as invalid", () => {
    const bad = clone(chain);
    bad[0]!.ed25519 = { kid: key.kid, signature: "not-a-signature" };
    const result = verifyReceiptChain(bad, allKeys);
    expect(result.receipts[0]).toMatchObject({ well_formed: false, ed25519: { status: "invalid" } });
    expect(result.receipts[0]!.integrity.status).toBe("valid");
    expect(result.overall_status).toBe("invalid");
  });

  it("is valid and not authenticated for an empty chain", () => {
    expect(verifyReceiptChain([], allKeys)).toEqual({
      overall_status: "valid",
      authenticated: false,
      receipts: [],
      problems: [],
    });
  });

  it("reports garbage without throwing", () => {
    const garbage = [null, "receipt", { receipt_number: "PR-2026-00002" }, []] as unknown as SignedReceipt[];
    const result = verifyReceiptChain(garbage, allKeys);
    expect(result.overall_status).toBe("invalid");
    expect(result.receipts.every((r) => !r.well_formed && r.overall_status === "invalid")).toBe(true);
    expect(result.problems.join("\n")).toContain("receipt #1");
  });

  it("throws a TypeError for a malformed JWKS", () => {
    expect(() => verifyReceiptChain(chain, { publicKeys: { keys: [{ kty: "RSA" }] } })).toThrow(TypeError);
  });

  it("verifies a slice from an anchor", () => {
    const slice = chain.slice(2);
    expect(verifyReceiptChain(slice, allKeys).receipts[0]!.chain.status).toBe("gap");
    expect(verifyReceiptChain(slice, allKeys).problems[0]).toBe(
      "the receipts before PR-2026-00003 (sequences 1–2) are missing",
    );
    const fromAnchor = verifyReceiptChain(slice, { ...allKeys, anchor: receiptAnchor(chain[1]!) });
    expect(fromAnchor.overall_status).toBe("valid");
    expect(statuses(fromAnchor, "chain")).toEqual(["valid", "valid", "valid"]);
    expect(verifyReceiptChain(slice, { ...allKeys, anchor: chain[1]! }).overall_status).toBe("valid");
    const wrongAnchor = verifyReceiptChain(slice, { ...allKeys, anchor: receiptAnchor(chain[0]!) });
    expect(wrongAnchor.receipts[0]!.chain.status).toBe("gap");
    const forgedAnchor = { receipt_number: "PR-2026-00002", receipt_hash: receiptHash(chain[0]!) };
    expect(verifyReceiptChain(slice, { ...allKeys, anchor: forgedAnchor }).receipts[0]!.chain.status).toBe(
      "broken",
    );
  });
});

describe("verifyReceiptLink", () => {
  const sign = (sequence: number, previous: string | null) =>
    signReceipt(makeBody(sequence, previous), { hmacKey: HMAC_KEY });

  it.each([
    ["sequence 1 without a previous hash is the genesis", sign(1, null), "genesis"],
    ["sequence 1 with a previous hash is broken", sign(1, receiptHash(chain[0]!)), "broken"],
    ["a later sequence without a previous hash is broken", sign(2, null), "broken"],
    ["a later sequence whose predecessor is missing is a gap", sign(2, receiptHash(chain[0]!)), "gap"],
  ])("without a predecessor: %s", (_label, receipt, status) => {
    const link = verifyReceiptLink(receipt, null);
    expect(link.status).toBe(status);
    expect(link.problems.length).toBe(status === "genesis" ? 0 : 1);
  });

  it("accepts the true predecessor and its anchor", () => {
    expect(verifyReceiptLink(chain[3]!, chain[2]!)).toEqual({ status: "valid", problems: [] });
    expect(verifyReceiptLink(chain[3]!, receiptAnchor(chain[2]!))).toEqual({ status: "valid", problems: [] });
  });

  it("rejects a null previous hash after genesis and a predecessor of another organization", () => {
    expect(verifyReceiptLink(sign(2, null), chain[0]!).status).toBe("broken");
    const foreign = signReceipt(makeBody(1, null, { organization: "globex" }), { hmacKey: HMAC_KEY });
    const link = verifyReceiptLink(chain[1]!, foreign);
    expect(link).toEqual({
      status: "broken",
      problems: ["PR-2026-00002 and PR-2026-00001 belong to different organizations"],
    });
  });

  it("rejects a receipt with a malformed number", () => {
    const bad = { ...chain[1]!, receipt_number: "PR-2026-2" };
    expect(verifyReceiptLink(bad, chain[0]!)).toEqual({
      status: "broken",
      problems: ["the receipt has a malformed receipt number"],
    });
  });
});

describe("verifyReceipt", () => {
  it("checks one receipt against its stored predecessor", () => {
    const check = verifyReceipt(chain[1]!, chain[0]!, allKeys);
    expect(check).toMatchObject({
      overall_status: "valid",
      integrity: { status: "valid" },
      ed25519: { status: "valid" },
      chain: { status: "valid" },
      problems: [],
    });
  });

  it("reports a wrong HMAC signature", () => {
    const resigned = { ...chain[1]!, signature: hmacSignature(chain[1]!, Buffer.alloc(32, 3)) };
    const check = verifyReceipt(resigned, chain[0]!, { hmacKey: HMAC_KEY });
    expect(check.integrity.status).toBe("invalid");
    expect(check.overall_status).toBe("invalid");
    expect(check.problems).toEqual([
      "PR-2026-00002 fails its integrity check: its signature does not match its contents",
    ]);
  });
});
