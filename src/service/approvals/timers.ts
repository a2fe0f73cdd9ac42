/**
 * An approval's durable timers (spec: approval timeout, fallback escalation): the timeout at the
 * organization's approval timeout and the escalation at half of it, as jobs (jobs.ts) that run
 * once on any replica; their handlers are idempotent.
 */
import type { Database, Queryable } from "../db/pool.js";
import { enqueueJob } from "../jobs.js";
import { enqueueApprovalEscalated } from "../notify/queue.js";
import type { SigningKey, SigningKeys } from "../receipts/signing-keys.js";
import { signApprovalResolution } from "./attestation.js";
import {
  type ApprovalRow,
  approvalTimeoutHours,
  lockApprovalIfAny,
  markEscalated,
  writeResolution,
} from "./store.js";
import type { ApprovalWaiters } from "./waiters.js";

/** Text of the condition for a backend timeout; contains the spec's "not resolved within". */
export const timeoutCondition = (hours: number) => `Approval not resolved within ${formatHours(hours)}`;
const formatHours = (h: number) =>
  h >= 1 && Number.isInteger(h) ? `${h} hour${h === 1 ? "" : "s"}` : `${Math.round(h * 60)} minutes`;

/** Schedules the approval's timeout (after `timeoutMs`) and fallback escalation (at half) as durable jobs. */
export async function scheduleApprovalTimers(
  q: Queryable,
  opts: { approvalId: string; nowMs: number; timeoutMs: number },
): Promise<void> {
  await enqueueJob(q, {
    kind: "approval_escalation",
    runAtMs: opts.nowMs + opts.timeoutMs / 2,
    payload: { approval_id: opts.approvalId },
    dedupeKey: `approval_escalation:${opts.approvalId}`,
  });
  await enqueueJob(q, {
    kind: "approval_timeout",
    runAtMs: opts.nowMs + opts.timeoutMs,
    payload: { approval_id: opts.approvalId },
    dedupeKey: `approval_timeout:${opts.approvalId}`,
  });
}

/** Resolves a pending approval as timed out (a backend deny), signed with `key` when given. */
export async function timeOut(
  q: Queryable,
  a: ApprovalRow,
  nowMs: number,
  key?: SigningKey | null,
): Promise<void> {
  const condition = timeoutCondition(await approvalTimeoutHours(q, a.org_id));
  await writeResolution(q, a, { outcome: { kind: "timed_out", condition }, nowMs });
  if (key) await signApprovalResolution(q, a.id, key);
}

/**
 * Job handler: marks a still-pending approval timed out and wakes its held requests. Idempotent.
 * With `signingKeys`, signs the timeout; it also signs a timeout that was recorded unsigned, so every
 * timeout is signed by the time its job has run.
 */
export async function timeoutApprovalJob(
  deps: { db: Database; approvalWaiters: ApprovalWaiters; signingKeys?: SigningKeys },
  approvalId: string,
  nowMs: number,
): Promise<void> {
  const key = deps.signingKeys ? await deps.signingKeys.active("approval") : null;
  const timedOutChain = await deps.db.tx(async (q) => {
    const a = await lockApprovalIfAny(q, approvalId);
    if (a?.status === "pending") {
      await timeOut(q, a, nowMs, key);
      return a.chain_id;
    }
    if (key && a?.status === "timed_out" && a.signature == null) {
      await signApprovalResolution(q, a.id, key);
    }
    return null;
  });
  if (timedOutChain) deps.approvalWaiters.wake(timedOutChain);
}

/** Job handler: at half the timeout, mails the fallback approvers once; returns the mails queued. Idempotent. */
export async function escalateApprovalJob(db: Database, approvalId: string, nowMs: number): Promise<number> {
  return db.tx(async (q) => {
    const a = await lockApprovalIfAny(q, approvalId);
    if (a?.status !== "pending" || a.escalated_at) return 0;
    await markEscalated(q, a.id, nowMs);
    return enqueueApprovalEscalated(q, { orgId: a.org_id, approvalId: a.id, nowMs });
  });
}
