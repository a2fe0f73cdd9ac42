/**
 * The revocation rule shared by the service and `tollgate verify` (src/receipts/key-validity.ts,
 * ADR 0010): refused at or after the revocation time, accepted before; unreadable times and
 * malformed published revocations fail closed.
 */
import { describe, expect, it } from "vitest";
import { revocationOf, revocationsOf, revokedProblem } from "../../../src/receipts/key-validity.js";

const T = Date.parse("2026-11-20T08:00:00Z");

describe("revocationOf", () => {
  it("accepts what was signed before the revocation time and refuses it from then on", () => {
    expect(revocationOf(null, "2030-01-01T00:00:00Z")).toBe("not_revoked");
    expect(revocationOf(T, "2026-11-20T07:59:59.999Z")).toBe("signed_before_revocation");
    expect(revocationOf(T, "2026-11-20T08:00:00Z")).toBe("revoked");
    expect(revocationOf(T, new Date(T + 1))).toBe("revoked");
    expect(revocationOf(T, T - 1)).toBe("signed_before_revocation");
  });

  it("refuses a revoked key's signature whose time cannot be read", () => {
    for (const t of [undefined, null, "", "yesterday", {}, Number.NaN])
      expect(revocationOf(T, t)).toBe("revoked");
    expect(revocationOf(Number.NEGATIVE_INFINITY, "1970-01-01T00:00:00Z")).toBe("revoked");
  });
});

describe("revocationsOf", () => {
  it("reads revoked_at of a published JWKS; a malformed or missing time revokes from the beginning", () => {
    const r = revocationsOf({
      keys: [
        { kid: "a", status: "active", revoked_at: null },
        { kid: "b", status: "revoked", revoked_at: "2026-11-20T08:00:00Z" },
        { kid: "c", status: "revoked", revoked_at: "soon" },
        { kid: "d", status: "revoked" },
        { kid: 5, revoked_at: "2026-11-20T08:00:00Z" },
        "junk",
      ],
    });
    expect([...r]).toEqual([
      ["b", T],
      ["c", Number.NEGATIVE_INFINITY],
      ["d", Number.NEGATIVE_INFINITY],
    ]);
    expect(revocationsOf(null).size).toBe(0);
    expect(revocationsOf({ keys: "x" }).size).toBe(0);
  });

  it("names the key and the time in the problem", () => {
    expect(revokedProblem("PR-2026-00001", "0123456789abcdef", T)).toBe(
      "PR-2026-00001 is signed with key 0123456789abcdef after its revocation (revoked from 2026-11-20T08:00:00.000Z): refused",
    );
    expect(revokedProblem("x", "k", Number.NEGATIVE_INFINITY)).toContain("revoked from the beginning");
  });
});
