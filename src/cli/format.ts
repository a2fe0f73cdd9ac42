/**
 * Human-readable output of `tollgate verify`: one line per receipt (signature, link, events,
 * approvals), its problems indented under it (and a note for a receipt issued before the event
 * hash chain, whose events and approvals are not evaluated), then the export-level checks, the
 * checkpoint and a one-line result.
 */
import type { ExportReport } from "./verify-export.js";

const pad = (text: string, width: number) => text.padEnd(width);

/**
 * The text report; `jwksSource` and `approvalJwksSource` are the --jwks and --approval-jwks
 * arguments, or null when the export's own keys were used.
 */
export function formatReport(
  r: ExportReport,
  jwksSource: string | null,
  approvalJwksSource: string | null = null,
): string {
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
  lines.push(
    approvalJwksSource
      ? `Approval keys: ${r.approval_key_count} from ${approvalJwksSource}`
      : `Approval keys: ${r.approval_key_count} from the export itself (pass --approval-jwks <service>/.well-known/tollgate/approval-keys.json)`,
  );
  const older = r.pre_event_chain_receipt_count;
  lines.push(
    `Evidence: ${r.event_count} events, ${r.approval_count} approvals${older > 0 ? `; ${older} receipt${older === 1 ? "" : "s"} issued before the event hash chain (events and approvals not evaluated)` : ""}`,
  );
  lines.push("");
  const width = Math.max(14, ...r.receipts.map((x) => (x.receipt_number ?? `#${x.position}`).length));
  for (const x of r.receipts) {
    const mark = x.overall_status === "valid" ? "ok  " : "FAIL";
    lines.push(
      `  ${mark}  ${pad(x.receipt_number ?? `#${x.position}`, width)}  signature ${pad(x.signature, 13)}  link ${pad(x.link, 7)}  events ${pad(x.events, 13)}  approvals ${x.approvals}`,
    );
    if (x.receipt_format === "pre_event_chain") {
      lines.push("          · issued before the event hash chain: it commits to no events or approvals");
    }
    if (x.key_revocation === "signed_before_revocation") {
      lines.push("          · signed before its key was revoked: the signature still counts");
    }
    for (const p of x.principals)
      lines.push(`          · acted: ${p.spiffe_id}${p.pod_name ? ` (pod ${p.pod_name})` : ""}`);
    for (const p of x.problems) lines.push(`          - ${p}`);
  }
  if (r.receipts.length > 0) lines.push("");
  lines.push(`Export attestation: ${r.attestation.status}`);
  if (r.checkpoint) {
    const c = r.checkpoint;
    lines.push(
      `Checkpoint ${c.receipt_number ?? `sequence ${c.sequence}`} (sequence ${c.sequence}): signature ${c.signature}, log ${c.log}`,
    );
  }
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
