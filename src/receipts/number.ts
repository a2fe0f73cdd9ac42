/**
 * Human-readable receipt numbers (spec: "Resources and their fields" → Receipt, receipt_number).
 *
 * Form: `PR-YYYY-NNNNN`: the fixed prefix `PR-`, the four-digit year the receipt was created,
 * and the receipt's sequence number within its organization, zero-padded to five digits.
 *
 * The sequence is per organization and does NOT restart each year: it counts every receipt the
 * organization ever received (1, 2, 3, ...), and the year is only the year of creation. So
 * `PR-2026-00417` may be followed by `PR-2027-00418`. Chain verification relies on this: the
 * numeric suffix alone orders an organization's receipts and reveals gaps.
 *
 * A sequence beyond 99999 keeps all its digits (`PR-2026-123456`); padding only ever adds
 * zeros up to five digits and never truncates. Every number has exactly one spelling:
 * `parseReceiptNumber` rejects extra leading zeros (`PR-2026-000001`).
 */

/** The parts of a receipt number. */
export interface ReceiptNumberParts {
  /** Four-digit year of creation (1000–9999). */
  year: number;
  /** Sequence within the organization, starting at 1; does not restart each year. */
  sequence: number;
}

const RECEIPT_NUMBER = /^PR-(\d{4})-(\d{5,})$/;

/**
 * Formats a receipt number: `formatReceiptNumber(2026, 1)` → `"PR-2026-00001"`,
 * `formatReceiptNumber(2026, 123456)` → `"PR-2026-123456"`.
 *
 * @param year four-digit year of creation, an integer in 1000–9999.
 * @param sequence the organization's receipt sequence, a safe integer ≥ 1.
 * @throws RangeError when the year or sequence is out of range or not an integer.
 */
export function formatReceiptNumber(year: number, sequence: number): string {
  if (!Number.isInteger(year) || year < 1000 || year > 9999) {
    throw new RangeError(`receipt number year must be a four-digit integer, got ${year}`);
  }
  if (!Number.isSafeInteger(sequence) || sequence < 1) {
    throw new RangeError(`receipt sequence must be a safe integer ≥ 1, got ${sequence}`);
  }
  return `PR-${year}-${String(sequence).padStart(5, "0")}`;
}

/**
 * Parses a receipt number into its year and sequence.
 *
 * Returns null (never throws) when the text is not a receipt number in its one canonical
 * spelling: wrong prefix, a year outside 1000–9999, fewer than five sequence digits, extra
 * leading zeros beyond the five-digit padding, sequence 0, or a sequence above
 * `Number.MAX_SAFE_INTEGER`. For every valid number,
 * `formatReceiptNumber(p.year, p.sequence) === text`.
 */
export function parseReceiptNumber(text: string): ReceiptNumberParts | null {
  const match = RECEIPT_NUMBER.exec(text);
  if (match === null) return null;
  const [, yearText, sequenceText] = match as unknown as [string, string, string];
  const year = Number(yearText);
  const sequence = Number(sequenceText);
  if (year < 1000 || !Number.isSafeInteger(sequence) || sequence < 1) return null;
  if (sequenceText.length > 5 && sequenceText.startsWith("0")) return null;
  return { year, sequence };
}
