import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatReceiptNumber, parseReceiptNumber } from "../../../src/receipts/number.js";
import { ReceiptNumberSchema } from "../../../src/receipts/schema.js";

describe("formatReceiptNumber", () => {
  it.each([
    [2026, 1, "PR-2026-00001"],
    [2026, 42, "PR-2026-00042"],
    [2026, 9999, "PR-2026-09999"],
    [2026, 99999, "PR-2026-99999"],
    [2026, 100000, "PR-2026-100000"],
    [2027, 123456789, "PR-2027-123456789"],
    [1000, 7, "PR-1000-00007"],
    [9999, Number.MAX_SAFE_INTEGER, `PR-9999-${Number.MAX_SAFE_INTEGER}`],
  ])("formats year %i, sequence %i as %s", (year, sequence, expected) => {
    expect(formatReceiptNumber(year, sequence)).toBe(expected);
    expect(parseReceiptNumber(expected)).toEqual({ year, sequence });
    expect(ReceiptNumberSchema.safeParse(expected).success).toBe(true);
  });

  it.each([
    [999, 1],
    [10000, 1],
    [2026.5, 1],
    [Number.NaN, 1],
    [2026, 0],
    [2026, -1],
    [2026, 1.5],
    [2026, Number.NaN],
    [2026, Number.MAX_SAFE_INTEGER + 1],
  ])("rejects year %d, sequence %d with a RangeError", (year, sequence) => {
    expect(() => formatReceiptNumber(year, sequence)).toThrow(RangeError);
  });
});

describe("parseReceiptNumber", () => {
  it.each([
    "PR-2026-0001",
    "PR-2026-000001",
    "PR-2026-00000",
    "PR-0999-00001",
    "pr-2026-00001",
    "PR-26-00001",
    "PR-2026-00001 ",
    " PR-2026-00001",
    "PR-2026-0000a",
    "PR-2026-99999999999999999",
    "",
  ])("rejects %j", (text) => {
    expect(parseReceiptNumber(text)).toBeNull();
    expect(ReceiptNumberSchema.safeParse(text).success).toBe(false);
  });

  it("round-trips every year and sequence", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1000, max: 9999 }), fc.maxSafeNat(), (year, n) => {
        const sequence = n + 1 > Number.MAX_SAFE_INTEGER ? n : n + 1;
        const text = formatReceiptNumber(year, sequence);
        expect(text).toMatch(/^PR-\d{4}-\d{5,}$/);
        expect(parseReceiptNumber(text)).toEqual({ year, sequence });
      }),
    );
  });
});
