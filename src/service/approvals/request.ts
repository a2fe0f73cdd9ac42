/**
 * Opening an approval gate (spec: "Events" 3: require_approval): the pending approval, its
 * durable timers and the approvers' mail, written in the recording transaction.
 */
import type { PolicyDecision } from "../../policy/schema.js";
import type { Queryable } from "../db/pool.js";
import { enqueueApprovalRequested } from "../notify/queue.js";
import { insertApproval } from "./store.js";
import { scheduleApprovalTimers } from "./timers.js";

/**
 * Writes a pending approval of `eventId`, schedules its timeout and escalation, and queues the
 * approval-request mail (approvers plus `extraRecipients`). Returns when it expires (ISO 8601).
 */
export async function requestApproval(
  q: Queryable,
  opts: {
    approvalId: string;
    orgId: string;
    chainId: string;
    eventId: string;
    decision: PolicyDecision;
    nowMs: number;
    /** The organization's approval timeout, in hours. */
    timeoutHours: number;
    extraRecipients: string[];
  },
): Promise<string> {
  const timeoutMs = opts.timeoutHours * 3600_000;
  await insertApproval(q, {
    id: opts.approvalId,
    orgId: opts.orgId,
    chainId: opts.chainId,
    eventId: opts.eventId,
    nowMs: opts.nowMs,
    timeoutMs,
    decision: opts.decision,
  });
  await scheduleApprovalTimers(q, { approvalId: opts.approvalId, nowMs: opts.nowMs, timeoutMs });
  await enqueueApprovalRequested(q, {
    orgId: opts.orgId,
    approvalId: opts.approvalId,
    nowMs: opts.nowMs,
    extraRecipients: opts.extraRecipients,
  });
  return new Date(opts.nowMs + timeoutMs).toISOString();
}
