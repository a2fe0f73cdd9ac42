/**
 * Approvals as the API and the dashboard show them: GET /v1/approvals(/{id}),
 * GET /v1/chains/{chain_id}/approval-status (spec: "Approval request", approval polling).
 */

import { z } from "zod";
import type { ApprovalStatusResponseSchema, ApprovalViewSchema } from "../../contract/v1/approvals.js";
import type { WireOf } from "../../contract/v1/chains.js";
import type { ApprovalStatus } from "../../contract/v1/wire.js";
import { getChain } from "../chains/store.js";
import { cumulativeMetrics } from "../chains/views.js";
import type { Clock } from "../clock.js";
import type { Database } from "../db/pool.js";
import { notFound } from "../errors.js";
import type { SigningKeys } from "../receipts/signing-keys.js";
import { DENIED_WITHOUT_NOTES } from "./final-decision.js";
import { type ApprovalReadRow, listApprovalRows, readApproval, readChainApproval } from "./store.js";
import { timeoutApprovalJob, timeoutCondition } from "./timers.js";
import { type ApprovalWaiters, MAX_APPROVAL_WAIT_SECONDS } from "./waiters.js";

/** The approval as the API returns it. */
export function approvalView(a: ApprovalReadRow) {
  const condition =
    a.status === "timed_out"
      ? timeoutCondition(a.approval_timeout_hours)
      : a.status === "denied"
        ? (a.notes ?? DENIED_WITHOUT_NOTES)
        : a.notes;
  return {
    approval_id: a.id,
    chain_id: a.chain_id,
    event_id: a.event_id,
    status: a.status,
    requested_at: new Date(a.requested_at).toISOString(),
    expires_at: new Date(a.expires_at).toISOString(),
    escalated_at: a.escalated_at ? new Date(a.escalated_at).toISOString() : null,
    decided_at: a.decided_at ? new Date(a.decided_at).toISOString() : null,
    decided_by: a.decided_by,
    notes: a.notes,
    condition,
    decision: a.final_decision ?? a.requested_decision,
    exception: a.exception_id
      ? {
          exception_id: a.exception_id,
          duration: a.exception_duration as string,
          expires_at: new Date(a.exception_expires_at as Date).toISOString(),
        }
      : null,
  } satisfies WireOf<typeof ApprovalViewSchema>;
}
/** An approval as the service writes it (checked against the contract's ApprovalViewSchema). */
export type ApprovalBody = ReturnType<typeof approvalView>;

/**
 * One approval of an organization.
 * @throws ApiError 404 when it does not exist (or belongs to another organization).
 */
export async function getApproval(db: Database, orgId: string, approvalId: string): Promise<ApprovalBody> {
  const row = await readApproval(db, orgId, approvalId);
  if (!row) throw notFound("Approval");
  return approvalView(row);
}

/**
 * Query of GET /v1/chains/{chain_id}/approval-status. `wait` (seconds, 0..5, beyond the spec)
 * holds the request while the approval is pending (waiters.ts); absent or 0 answers at once,
 * as the spec's plain poll.
 */
export const ApprovalStatusQuerySchema = z.object({
  approval_id: z.uuid().optional(),
  wait: z.coerce.number().min(0).max(MAX_APPROVAL_WAIT_SECONDS).optional(),
});

/**
 * GET /v1/chains/{chain_id}/approval-status: the chain's status and its latest (or the given)
 * approval. A pending approval past its deadline is timed out on read, so callers never wait
 * on a missed timer.
 * @throws ApiError 404 unknown chain, or an approval_id that is not the chain's.
 */
export async function approvalStatus(
  deps: { db: Database; clock: Clock; approvalWaiters: ApprovalWaiters; signingKeys?: SigningKeys },
  opts: { orgId: string; chainId: string; approvalId?: string },
) {
  const nowMs = deps.clock.nowMs();
  const chain = await getChain(deps.db, opts.orgId, opts.chainId);
  const row = await readChainApproval(deps.db, opts.chainId, opts.approvalId);
  if (opts.approvalId && !row) throw notFound("Approval");
  if (row?.status === "pending" && new Date(row.expires_at).getTime() <= nowMs) {
    await timeoutApprovalJob(deps, row.id, nowMs);
    return approvalStatus(deps, opts);
  }
  return {
    chain_id: opts.chainId,
    chain_status: chain.status,
    approval: row ? approvalView(row) : null,
  } satisfies WireOf<typeof ApprovalStatusResponseSchema>;
}

/** Approvals of an organization, newest first, optionally by status, with their action. */
export async function listApprovals(
  db: Database,
  orgId: string,
  opts: { status?: ApprovalStatus; limit?: number } = {},
) {
  const rows = await listApprovalRows(db, orgId, { status: opts.status, limit: opts.limit ?? 100 });
  return rows.map((r) => ({
    ...approvalView(r),
    chain_name: r.chain_name,
    agent_name: r.agent_name,
    principal: r.principal ?? null,
    action_type: r.action_type,
    action_name: r.action_name,
    payload: r.payload as Record<string, unknown>,
    cumulative_metrics: cumulativeMetrics(r),
  }));
}
