/**
 * Resolving approval gates (spec: "Reviewer approves" / "Reviewer denies", "States and
 * transitions" pending_approval rows, "Events" 4): a reviewer's decision (optionally granting a
 * time-boxed exception), the caller withdrawing its own approval, and completion cancelling what
 * still waits. Each resolution is signed with the active "approval" key when keys are given, and
 * wakes the chain's held approval-status requests once committed.
 */

import type { DecideApproval, WithdrawApproval } from "../../contract/v1/approvals.js";
import { ApiErrorCode } from "../../contract/v1/errors.js";
import type { ApprovalStatus } from "../../contract/v1/wire.js";
import { redactText } from "../../policy/sanitize.js";
import { addApprovedMetrics } from "../chains/store.js";
import type { Clock } from "../clock.js";
import type { Database, Queryable } from "../db/pool.js";
import { conflict } from "../errors.js";
import { grantException } from "../exceptions/store.js";
import type { SigningKey, SigningKeys } from "../receipts/signing-keys.js";
import { signApprovalResolution } from "./attestation.js";
import { approvedEvent, lockApproval, lockPendingOfChain, writeResolution } from "./store.js";
import { timeOut } from "./timers.js";
import { type ApprovalBody, getApproval } from "./views.js";
import type { ApprovalWaiters } from "./waiters.js";

/** What resolving an approval needs: the database, the clock, the held requests to wake, the signing keys. */
export interface ResolveDeps {
  db: Database;
  clock: Clock;
  approvalWaiters: ApprovalWaiters;
  /** Signs each resolution with the active "approval" key (attestation.ts); unsigned without. */
  signingKeys?: SigningKeys;
}

const alreadyResolved = (approvalId: string, status: ApprovalStatus) =>
  conflict(ApiErrorCode.APPROVAL_RESOLVED, `The approval is already ${status}`, {
    approval_id: approvalId,
    status,
  });

/**
 * Approves or denies a pending approval. Approving may grant a time-boxed exception scoped to
 * the original action's agent, action type and destination domain, and adds the action's
 * metrics to its chain. Denial leaves the chain open. A late decision on an expired approval
 * commits the timeout first and then answers 409.
 * @throws ApiError 404 unknown approval (or another organization's); 409 TG_ERR_APPROVAL_RESOLVED
 *   when it was already decided, timed out or cancelled.
 */
export async function decideApproval(
  deps: ResolveDeps,
  opts: { orgId: string; approvalId: string; body: DecideApproval; decidedBy: string },
): Promise<ApprovalBody> {
  const nowMs = deps.clock.nowMs();
  const key = deps.signingKeys ? await deps.signingKeys.active("approval") : null;
  let resolvedChain: string | null = null;
  const refused = await deps.db.tx(async (q): Promise<ApprovalStatus | null> => {
    const a = await lockApproval(q, opts.approvalId, opts.orgId);
    if (a.status !== "pending") return a.status;
    resolvedChain = a.chain_id;
    if (new Date(a.expires_at).getTime() <= nowMs) {
      await timeOut(q, a, nowMs, key);
      return "timed_out";
    }
    // Reviewers paste things: the payload's secret rules apply to notes too.
    const notes = redactText(opts.body.notes?.trim() ?? "") || null;
    if (opts.body.decision === "deny") {
      await writeResolution(q, a, { outcome: { kind: "denied", decidedBy: opts.decidedBy, notes }, nowMs });
      if (key) await signApprovalResolution(q, a.id, key);
      return null;
    }
    const event = await approvedEvent(q, a.event_id);
    const exceptionId = opts.body.exception_duration
      ? await grantException(q, {
          orgId: a.org_id,
          approvalId: a.id,
          // Events store only the facts that are set (chains/record.ts storedFacts); rows
          // written before that kept the engine's exception_scope.
          scope: event.facts.exception_scope ?? {
            agent_name: event.agent_name,
            action_type: event.action_type,
            destination_domain: event.facts.destination_domain ?? null,
          },
          duration: opts.body.exception_duration,
          grantedBy: opts.decidedBy,
          nowMs,
        })
      : null;
    await writeResolution(q, a, {
      outcome: { kind: "approved", decidedBy: opts.decidedBy, notes },
      nowMs,
      exceptionId,
    });
    const delta = event.facts.metrics_delta;
    if (delta) {
      await addApprovedMetrics(q, a.chain_id, delta, event.agent_name);
    }
    if (key) await signApprovalResolution(q, a.id, key);
    return null;
  });
  if (resolvedChain) deps.approvalWaiters.wake(resolvedChain);
  if (refused) throw alreadyResolved(opts.approvalId, refused);
  return getApproval(deps.db, opts.orgId, opts.approvalId);
}

/**
 * The caller withdraws its own pending approval (beyond the spec: an MCP client cancelled the
 * task, a gRPC caller gave up): the approval becomes `cancelled`, its event is denied ("Withdrawn
 * by the caller"), the chain is open again for further actions, and the resolution is signed.
 * Nothing was forwarded and nothing will be: a withdrawn approval can no longer be decided.
 * @throws ApiError 404 unknown approval (or another organization's); 409 TG_ERR_APPROVAL_RESOLVED
 *   when it was already decided, timed out or cancelled.
 */
export async function withdrawApproval(
  deps: ResolveDeps,
  opts: { orgId: string; approvalId: string; body: WithdrawApproval; withdrawnBy: string },
): Promise<ApprovalBody> {
  const nowMs = deps.clock.nowMs();
  const key = deps.signingKeys ? await deps.signingKeys.active("approval") : null;
  const reason = redactText(opts.body.reason?.trim() ?? "") || null;
  const { refused, chainId } = await deps.db.tx(async (q) => {
    const a = await lockApproval(q, opts.approvalId, opts.orgId);
    if (a.status !== "pending") return { refused: a.status, chainId: null };
    await writeResolution(q, a, {
      outcome: { kind: "withdrawn", withdrawnBy: opts.withdrawnBy, reason },
      nowMs,
    });
    if (key) await signApprovalResolution(q, a.id, key);
    return { refused: null, chainId: a.chain_id };
  });
  if (chainId) deps.approvalWaiters.wake(chainId);
  if (refused) throw alreadyResolved(opts.approvalId, refused);
  return getApproval(deps.db, opts.orgId, opts.approvalId);
}

/**
 * Cancels the chain's pending approval when the chain is completed while it waits, inside the
 * completion's transaction `q`. With `key` (the active "approval" key, fetched before the
 * transaction), signs each cancellation. The caller's transaction is not visible here, so this
 * process's held requests are woken before its COMMIT: on PGlite their re-read queues behind the
 * transaction on the one pooled connection and sees the cancellation; on PostgreSQL the NOTIFY
 * sent by writeResolution (delivered at COMMIT) wakes them again, and without a listener they
 * answer when their wait elapses.
 */
export async function cancelPendingApprovals(
  q: Queryable,
  opts: { chainId: string; nowMs: number; key?: SigningKey | null; approvalWaiters: ApprovalWaiters },
): Promise<void> {
  const pending = await lockPendingOfChain(q, opts.chainId);
  for (const a of pending) {
    await writeResolution(q, a, { outcome: { kind: "chain_completed" }, nowMs: opts.nowMs });
    if (opts.key) await signApprovalResolution(q, a.id, opts.key);
  }
  if (pending.length) opts.approvalWaiters.wake(opts.chainId);
}
