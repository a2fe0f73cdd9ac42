/**
 * Writes approval mail into the outbox inside the caller's transaction (the approval and its
 * mail commit or roll back together; outbox.ts delivers). One row per recipient, deduplicated
 * by approval, kind and recipient.
 */
import type { Queryable } from "../db/pool.js";
import { approverRecipients } from "../orgs/orgs.js";

/** The mail an approval sends: on request (approvers), on escalation (fallback approvers). */
export type ApprovalMailKind = "approval_requested" | "approval_escalated";

/** Queues `kind` mail about `approvalId` to each recipient; returns the rows queued (not duplicates). */
export async function enqueueApprovalMail(
  q: Queryable,
  opts: { orgId: string; approvalId: string; recipients: string[]; kind: ApprovalMailKind; nowMs: number },
): Promise<number> {
  let n = 0;
  for (const to of opts.recipients) {
    const { rowCount } = await q.query(
      `INSERT INTO outbox (kind, org_id, recipient, subject, payload, dedupe_key, created_at, next_attempt_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$7) ON CONFLICT (dedupe_key) DO NOTHING`,
      [
        opts.kind,
        opts.orgId,
        to,
        opts.kind === "approval_requested" ? "Approval required" : "Approval required (escalated)",
        { approval_id: opts.approvalId },
        `${opts.kind}:${opts.approvalId}:${to}`,
        new Date(opts.nowMs),
      ],
    );
    n += rowCount ?? 0;
  }
  return n;
}

/** Queues the approval-request mail: one per approver of the organization plus `extraRecipients`. */
export async function enqueueApprovalRequested(
  q: Queryable,
  opts: { orgId: string; approvalId: string; nowMs: number; extraRecipients?: string[] },
): Promise<number> {
  const { approvers } = await approverRecipients(q, opts.orgId);
  const recipients = [...new Set([...approvers, ...(opts.extraRecipients ?? [])])];
  return enqueueApprovalMail(q, { ...opts, recipients, kind: "approval_requested" });
}

/** Queues the escalation mail to the organization's fallback approvers. */
export async function enqueueApprovalEscalated(
  q: Queryable,
  opts: { orgId: string; approvalId: string; nowMs: number },
): Promise<number> {
  const { fallback } = await approverRecipients(q, opts.orgId);
  return enqueueApprovalMail(q, { ...opts, recipients: fallback, kind: "approval_escalated" });
}
