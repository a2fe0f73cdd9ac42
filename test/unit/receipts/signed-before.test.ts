/**
 * Receipts signed before a change of canonicalizer still verify, and today's code signs the same
 * bodies to the same bytes. signed-before.json holds a 3-receipt chain (HMAC with HMAC_KEY and
 * Ed25519, public key in its JWKS) signed by src/receipts when RFC 8785 was serialized by
 * `canonicalize` 4.0.0: `buildChain(3, { signingKey }, (n, previous) => makeBody(n, previous,
 * { metadata: METADATA }))`. METADATA carries what RFC 8785 has rules for (key order by UTF-16
 * code units beyond the BMP, ECMAScript number forms, string escapes), so a library that
 * serializes any of it differently fails here. The file is data: never regenerate it to make
 * this test pass.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Jwks } from "../../../src/receipts/ed25519.js";
import type { SignedReceipt } from "../../../src/receipts/schema.js";
import { receiptBody, receiptHash, signReceipt } from "../../../src/receipts/sign.js";
import { verifyReceiptChain } from "../../../src/receipts/verify.js";
import { HMAC_KEY, makeBody } from "./fixtures.js";

/** The receipts' metadata, as JSON text: JSON.parse keeps `56.0`, `1E30` and the escapes as written. */
const METADATA = JSON.parse(String.raw`{
  "ticket": "OPS-17",
  "\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control\u007f",
  "\u00f6": "Latin Small Letter O With Diaeresis", "</script>": "Browser Challenge", "": "empty",
  "toJSON": {"b": 1, "a": 2}, "nested": {"z": [], "A": {}, "a": [{}]},
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001, 1e21, 1e20,
    1e-7, 0.000001, 5e-324, 1.7976931348623157e308, 9007199254740993, -0.0000033333333333333333, 56.0],
  "escapes": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/ \u0000\u001f\b\f\t \u2028\u2029 \u1e0d\u0307"
}`);

const stored = JSON.parse(readFileSync(new URL("./signed-before.json", import.meta.url), "utf8")) as {
  jwks: Jwks;
  receipts: SignedReceipt[];
};

describe("receipts signed with canonicalize 4.0.0", () => {
  it("verify: HMAC, Ed25519 and every link", () => {
    const result = verifyReceiptChain(stored.receipts, {
      hmacKey: HMAC_KEY,
      publicKeys: stored.jwks,
      requireEd25519: true,
    });
    expect(result.problems).toEqual([]);
    expect(result.overall_status).toBe("valid");
    expect(result.receipts.map((r) => [r.integrity.status, r.ed25519.status, r.chain.status])).toEqual([
      ["valid", "valid", "genesis"],
      ["valid", "valid", "valid"],
      ["valid", "valid", "valid"],
    ]);
  });

  it("are what today's code signs and hashes for the same bodies", () => {
    let previous: string | null = null;
    for (const [i, receipt] of stored.receipts.entries()) {
      const body = makeBody(i + 1, previous, { metadata: METADATA });
      expect(receiptBody(receipt)).toEqual(body);
      const signed = signReceipt(body, { hmacKey: HMAC_KEY });
      expect(signed.signature).toBe(receipt.signature);
      expect(receiptHash({ ...signed, ed25519: receipt.ed25519 })).toBe(receiptHash(receipt));
      previous = receiptHash(receipt);
    }
  });
});
