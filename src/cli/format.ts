/**
 * Human-readable output of `tollgate verify`: one line per receipt, its problems indented under
 * it, then the export-level checks and a one-line result.
 */
import type { ExportReport } from "./verify-export.js";

const pad = (text: string, width: number) => text.padEnd(width);

/** The text report; `jwksSource` is the --jwks argument, or null when the export's keys were used. */
export function formatReport(r: ExportReport, jwksSource: string | null): string {
  const lines: string[] = [];
  const range =
    r.receipt_count === 0
      ? "no receipts"
      : `sequences ${r.from_sequence}–${r.to_sequence} (${r.receipt_count} receipts)`;
  lines.push(`Receipt export of organization ${r.organization}: ${range}`);
  lines.push(
    jwksSource
      ? `Keys: ${r.key_count} from ${jwksSource}`
      : `Keys: ${r.key_count} from the export itself; this checks consistency, not origin (pass --jwks <service>/.well-known/tollgate/receipt-keys.json)`,
  );
  lines.push("");
  const width = Math.max(14, ...r.receipts.map((x) => (x.receipt_number ?? `#${x.position}`).length));
  for (const x of r.receipts) {
    const mark = x.overall_status === "valid" ? "ok  " : "FAIL";
    lines.push(
      `  ${mark}  ${pad(x.receipt_number ?? `#${x.position}`, width)}  signature ${pad(x.signature, 13)}  link ${x.link}`,
    );
    for (const p of x.problems) lines.push(`          - ${p}`);
  }
  if (r.receipts.length > 0) lines.push("");
  lines.push(`Export attestation: ${r.attestation.status}`);
  const receiptProblems = new Set(r.receipts.flatMap((x) => x.problems));
  const other = r.problems.filter((p) => !receiptProblems.has(p));
  for (const p of other) lines.push(`  - ${p}`);
  lines.push(
    r.overall_status === "valid"
      ? `Result: VALID (${r.receipt_count} receipts verified offline)`
      : `Result: INVALID (${r.problems.length} problem${r.problems.length === 1 ? "" : "s"})`,
  );
  return `${lines.join("\n")}\n`;
}
