/**
 * Approval gates and time-boxed exceptions (spec: "Approval", "Time-boxed exception",
 * "States and transitions" pending_approval rows, "Events" 3–4). Timers (timeout at the
 * organization's approval timeout, fallback escalation at half of it) are durable jobs.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { redactText } from "../../policy/sanitize.js";
import type { PolicyDecision } from "../../policy/schema.js";
import type { Clock } from "../clock.js";
import type { Database, Queryable } from "../db/pool.js";
import { conflict, notFound } from "../errors.js";
import { signApprovalResolution } from "./attestation.js";
import { MAX_APPROVAL_WAIT_SECONDS, notifyApprovalChanged, wakeApprovalWaiters } from "./waiters.js";
import { type ChainRow, cumulativeMetrics, metricsUpdateSql, metricsUpdateValues } from "../chains/record.js";
import { enqueueJob } from "../jobs.js";
import type { SigningKey, SigningKeys } from "../receipts/signing-keys.js";
import { approverRecipients } from "../orgs/orgs.js";

/** Approval status values (the spec leaves them open; see README). */
export const ApprovalStatus = {
  pending: "pending",
  approved: "approved",
  denied: "denied",
  timed_out: "timed_out",
  cancelled: "cancelled",
} as const;
export type ApprovalStatus = (typeof ApprovalStatus)[keyof typeof ApprovalStatus];

/** Exception durations of the spec: 1 hour, 1 day, 1 week, 1 month (a calendar month, UTC). */
export const ExceptionDurationSchema = z.enum(["1h", "1d", "1w", "1m"]);
export type ExceptionDuration = z.infer<typeof ExceptionDurationSchema>;

/** End of an exception window that starts at `fromMs` (epoch ms). */
export function exceptionExpiry(fromMs: number, duration: ExceptionDuration): number {
  if (duration === "1h") return fromMs + 3600_000;
  if (duration === "1d") return fromMs + 86_400_000;
  if (duration === "1w") return fromMs + 7 * 86_400_000;
  const d = new Date(fromMs);
  d.setUTCMonth(d.getUTCMonth() + 1);
  return d.getTime();
}

/** Body of POST /v1/approvals/{approval_id}/decision. */
export const DecideApprovalSchema = z
  .object({
    decision: z.enum(["approve", "deny"]),
    notes: z.string().max(2000).optional(),
    exception_duration: ExceptionDurationSchema.optional(),
  })
  .strict()
  .refine((b) => b.decision === "approve" || b.exception_duration === undefined, {
    message: "an exception can only be granted when approving",
    path: ["exception_duration"],
  });
export type DecideApproval = z.infer<typeof DecideApprovalSchema>;

/** Text of the condition for a backend timeout; contains the spec's "not resolved within". */
export const timeoutCondition = (hours: number) => `Approval not resolved within ${formatHours(hours)}`;
const formatHours = (h: number) =>
  h >= 1 && Number.isInteger(h) ? `${h} hour${h === 1 ? "" : "s"}` : `${Math.round(h * 60)} minutes`;

/** Schedules the approval's timeout and fallback escalation as durable jobs. */
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

/** Queues one approval-request mail per approver (plus `extraRecipients`) in the outbox. */
export async function enqueueApprovalRequested(
  q: Queryable,
  opts: { orgId: string; approvalId: string; nowMs: number; extraRecipients?: string[] },
): Promise<number> {
  const { approvers } = await approverRecipients(q, opts.orgId);
  const recipients = [...new Set([...approvers, ...(opts.extraRecipients ?? [])])];
  return enqueueApprovalMail(q, opts.orgId, opts.approvalId, recipients, "approval_requested", opts.nowMs);
}

async function enqueueApprovalMail(
  q: Queryable,
  orgId: string,
  approvalId: string,
  recipients: string[],
  kind: "approval_requested" | "approval_escalated",
  nowMs: number,
): Promise<number> {
  let n = 0;
  for (const to of recipients) {
    const { rowCount } = await q.query(
      `INSERT INTO outbox (kind, org_id, recipient, subject, payload, dedupe_key, created_at, next_attempt_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$7) ON CONFLICT (dedupe_key) DO NOTHING`,
      [
        kind,
        orgId,
        to,
        kind === "approval_requested" ? "Approval required" : "Approval required (escalated)",
        { approval_id: approvalId },
        `${kind}:${approvalId}:${to}`,
        new Date(nowMs),
      ],
    );
    n += rowCount ?? 0;
  }
  return n;
}

interface ApprovalRow {
  id: string;
  org_id: string;
  chain_id: string;
  event_id: string;
  status: ApprovalStatus;
  requested_at: Date;
  expires_at: Date;
  escalate_at: Date;
  escalated_at: Date | null;
  decided_at: Date | null;
  decided_by: string | null;
  notes: string | null;
  exception_id: string | null;
  requested_decision: PolicyDecision;
  final_decision: PolicyDecision | null;
}

async function lockApproval(q: Queryable, approvalId: string, orgId?: string): Promise<ApprovalRow> {
  const { rows } = await q.query<ApprovalRow>(
    `SELECT * FROM approvals WHERE id = $1 ${orgId ? "AND org_id = $2" : ""} FOR UPDATE`,
    orgId ? [approvalId, orgId] : [approvalId],
  );
  if (!rows[0]) throw notFound("Approval");
  return rows[0];
}

/**
 * Writes the resolution of an approval to the approval, its event and its chain, and sends the
 * cross-replica wake-up of its held approval-status requests (delivered at COMMIT). Callers
 * wake this process's held requests after their transaction commits.
 */
async function resolve(
  q: Queryable,
  a: ApprovalRow,
  opts: {
    status: ApprovalStatus;
    decision: PolicyDecision;
    decidedBy: string | null;
    notes: string | null;
    nowMs: number;
    exceptionId?: string | null;
  },
): Promise<void> {
  await q.query(
    `UPDATE approvals SET status = $2, final_decision = $3, decided_by = $4, notes = $5, decided_at = $6, exception_id = $7
     WHERE id = $1`,
    [
      a.id,
      opts.status,
      opts.decision,
      opts.decidedBy,
      opts.notes,
      new Date(opts.nowMs),
      opts.exceptionId ?? null,
    ],
  );
  await q.query("UPDATE chain_events SET decision = $2 WHERE id = $1", [a.event_id, opts.decision]);
  await q.query("UPDATE chains SET status = 'open' WHERE id = $1 AND status = 'pending_approval'", [
    a.chain_id,
  ]);
  await notifyApprovalChanged(q, a.chain_id);
}

/**
 * Approves or denies a pending approval (spec: "Reviewer approves" / "Reviewer denies").
 * Approving may grant a time-boxed exception scoped to the original action's agent, action type
 * and destination domain. Denial leaves the chain open. With `keys`, the resolution is signed
 * with the active "approval" Ed25519 key in the same transaction (approval-attestation.ts).
 * @throws ApiError 404 unknown approval (or another organization's); 409 TG_ERR_APPROVAL_RESOLVED
 *   when it was already decided, timed out or cancelled.
 */
export async function decideApproval(
  db: Database,
  opts: {
    orgId: string;
    approvalId: string;
    body: DecideApproval;
    decidedBy: string;
    clock: Clock;
    keys?: SigningKeys;
  },
) {
  const nowMs = opts.clock.nowMs();
  const approvalKey = opts.keys ? await opts.keys.active("approval") : null;
  // A late decision on an expired approval commits the timeout first and then answers 409.
  let resolvedChain: string | null = null;
  const refused = await db.tx(async (q): Promise<ApprovalStatus | null> => {
    const a = await lockApproval(q, opts.approvalId, opts.orgId);
    if (a.status !== "pending") return a.status;
    resolvedChain = a.chain_id;
    if (new Date(a.expires_at).getTime() <= nowMs) {
      await timeOut(q, a, nowMs, approvalKey);
      return "timed_out";
    }
    // Reviewers paste things: the payload's secret rules apply to notes too.
    const notes = redactText(opts.body.notes?.trim() ?? "") || null;
    if (opts.body.decision === "deny") {
      await resolve(q, a, {
        status: "denied",
        decision: {
          ...a.requested_decision,
          policy_decision: "deny",
          decision_source: "human_approval",
          decision_reason: notes ?? "Denied by reviewer",
        },
        decidedBy: opts.decidedBy,
        notes,
        nowMs,
      });
      if (approvalKey) await signApprovalResolution(q, a.id, approvalKey);
      return null;
    }
    const ev = await q.query("SELECT agent_name, action_type, facts FROM chain_events WHERE id = $1", [
      a.event_id,
    ]);
    const event = ev.rows[0]!;
    let exceptionId: string | null = null;
    if (opts.body.exception_duration) {
      exceptionId = randomUUID();
      // Events store only the facts that are set (chains.ts storedFacts); rows written before
      // that kept the engine's exception_scope.
      const scope = event.facts.exception_scope ?? {
        agent_name: event.agent_name,
        action_type: event.action_type,
        destination_domain: event.facts.destination_domain ?? null,
      };
      await q.query(
        `INSERT INTO exceptions (id, org_id, approval_id, agent_name, action_type, destination_domain, duration, granted_by, created_at, expires_at)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
        [
          exceptionId,
          a.org_id,
          a.id,
          scope.agent_name,
          scope.action_type,
          scope.destination_domain ?? null,
          opts.body.exception_duration,
          opts.decidedBy,
          new Date(nowMs),
          new Date(exceptionExpiry(nowMs, opts.body.exception_duration)),
        ],
      );
    }
    await resolve(q, a, {
      status: "approved",
      decision: {
        ...a.requested_decision,
        policy_decision: "allow",
        decision_source: "human_approval",
        decision_reason: notes ? `Approved by ${opts.decidedBy}: ${notes}` : `Approved by ${opts.decidedBy}`,
      },
      decidedBy: opts.decidedBy,
      notes,
      nowMs,
      exceptionId,
    });
    const delta = event.facts.metrics_delta;
    if (delta) {
      await q.query(`UPDATE chains SET ${metricsUpdateSql(2)} WHERE id = $1`, [
        a.chain_id,
        ...metricsUpdateValues(delta, event.agent_name),
      ]);
    }
    if (approvalKey) await signApprovalResolution(q, a.id, approvalKey);
    return null;
  });
  if (resolvedChain) wakeApprovalWaiters(resolvedChain);
  if (refused) {
    throw conflict("TG_ERR_APPROVAL_RESOLVED", `The approval is already ${refused}`, {
      approval_id: opts.approvalId,
      status: refused,
    });
  }
  return getApproval(db, opts.orgId, opts.approvalId);
}

/** Body of POST /v1/approvals/{approval_id}/withdraw. */
export const WithdrawApprovalSchema = z.preprocess(
  (v) => v ?? {},
  z.object({ reason: z.string().max(500).optional() }).strict(),
);
export type WithdrawApproval = z.infer<typeof WithdrawApprovalSchema>;

/**
 * The caller withdraws its own pending approval (beyond the spec: an MCP client cancelled the
 * task, a gRPC caller gave up): the approval becomes `cancelled`, its event is denied ("Withdrawn
 * by the caller"), the chain is open again for further actions, and the resolution is signed.
 * Nothing was forwarded and nothing will be: a withdrawn approval can no longer be decided.
 * @throws ApiError 404 unknown approval (or another organization's); 409 TG_ERR_APPROVAL_RESOLVED
 *   when it was already decided, timed out or cancelled.
 */
export async function withdrawApproval(
  db: Database,
  opts: {
    orgId: string;
    approvalId: string;
    body: WithdrawApproval;
    withdrawnBy: string;
    clock: Clock;
    keys?: SigningKeys;
  },
) {
  const nowMs = opts.clock.nowMs();
  const approvalKey = opts.keys ? await opts.keys.active("approval") : null;
  const reason = redactText(opts.body.reason?.trim() ?? "") || null;
  const { refused, chainId } = await db.tx(async (q) => {
    const a = await lockApproval(q, opts.approvalId, opts.orgId);
    if (a.status !== "pending") return { refused: a.status, chainId: null };
    await resolve(q, a, {
      status: "cancelled",
      decision: {
        ...a.requested_decision,
        policy_decision: "deny",
        decision_reason: reason ? `Withdrawn by the caller: ${reason}` : "Withdrawn by the caller",
      },
      decidedBy: opts.withdrawnBy,
      notes: reason,
      nowMs,
    });
    if (approvalKey) await signApprovalResolution(q, a.id, approvalKey);
    return { refused: null, chainId: a.chain_id };
  });
  if (chainId) wakeApprovalWaiters(chainId);
  if (refused) {
    throw conflict("TG_ERR_APPROVAL_RESOLVED", `The approval is already ${refused}`, {
      approval_id: opts.approvalId,
      status: refused,
    });
  }
  return getApproval(db, opts.orgId, opts.approvalId);
}

async function timeOut(q: Queryable, a: ApprovalRow, nowMs: number, key?: SigningKey | null): Promise<void> {
  const org = await q.query("SELECT approval_timeout_hours FROM organizations WHERE id = $1", [a.org_id]);
  const condition = timeoutCondition(org.rows[0]?.approval_timeout_hours ?? 24);
  await resolve(q, a, {
    status: "timed_out",
    decision: {
      ...a.requested_decision,
      policy_decision: "deny",
      decision_source: "backend_evaluation",
      decision_reason: condition,
    },
    decidedBy: null,
    notes: null,
    nowMs,
  });
  if (key) await signApprovalResolution(q, a.id, key);
}

/**
 * Job handler: marks a still-pending approval timed out. Idempotent. With `keys`, signs the
 * timeout; it also signs a timeout that was recorded unsigned (timed out on read by a caller
 * without keys), so every timeout is signed by the time its job has run.
 */
export async function timeoutApprovalJob(
  db: Database,
  approvalId: string,
  nowMs: number,
  keys?: SigningKeys,
): Promise<void> {
  const key = keys ? await keys.active("approval") : null;
  const timedOutChain = await db.tx(async (q) => {
    const { rows } = await q.query<ApprovalRow>("SELECT * FROM approvals WHERE id = $1 FOR UPDATE", [
      approvalId,
    ]);
    const a = rows[0];
    if (a?.status === "pending") {
      await timeOut(q, a, nowMs, key);
      return a.chain_id;
    }
    if (key && a?.status === "timed_out" && (a as { signature?: string | null }).signature == null) {
      await signApprovalResolution(q, a.id, key);
    }
    return null;
  });
  if (timedOutChain) wakeApprovalWaiters(timedOutChain);
}

/** Job handler: at half the timeout, mails the fallback approvers once. Idempotent. */
export async function escalateApprovalJob(db: Database, approvalId: string, nowMs: number): Promise<number> {
  return db.tx(async (q) => {
    const { rows } = await q.query<ApprovalRow>("SELECT * FROM approvals WHERE id = $1 FOR UPDATE", [
      approvalId,
    ]);
    const a = rows[0];
    if (a?.status !== "pending" || a.escalated_at) return 0;
    await q.query("UPDATE approvals SET escalated_at = $2 WHERE id = $1", [a.id, new Date(nowMs)]);
    const { fallback } = await approverRecipients(q, a.org_id);
    return enqueueApprovalMail(q, a.org_id, a.id, fallback, "approval_escalated", nowMs);
  });
}

/**
 * Cancels the chain's pending approval when the chain is completed while it waits. With `key`
 * (the active "approval" key, fetched before the transaction), signs each cancellation.
 * The caller's transaction is not visible here, so this process's held requests are woken
 * before its COMMIT: on PGlite their re-read queues behind the transaction on the one pooled
 * connection and sees the cancellation; on PostgreSQL the NOTIFY sent by resolve() (delivered
 * at COMMIT) wakes them again, and without a listener they answer when their wait elapses.
 */
export async function cancelPendingApprovals(
  q: Queryable,
  chainId: string,
  nowMs: number,
  key?: SigningKey | null,
): Promise<void> {
  const { rows } = await q.query<ApprovalRow>(
    "SELECT * FROM approvals WHERE chain_id = $1 AND status = 'pending' FOR UPDATE",
    [chainId],
  );
  for (const a of rows) {
    await resolve(q, a, {
      status: "cancelled",
      decision: {
        ...a.requested_decision,
        policy_decision: "deny",
        decision_reason: "Chain completed before a decision",
      },
      decidedBy: null,
      notes: null,
      nowMs,
    });
    if (key) await signApprovalResolution(q, a.id, key);
  }
  if (rows.length) wakeApprovalWaiters(chainId);
}

/** The approval as the API returns it. */
function approvalView(a: ApprovalRow & Record<string, unknown>, hours: number) {
  const condition =
    a.status === "timed_out"
      ? timeoutCondition(hours)
      : a.status === "denied"
        ? (a.notes ?? "Denied by reviewer")
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
  };
}

const approvalSelect = `SELECT a.*, o.approval_timeout_hours, e.duration AS exception_duration, e.expires_at AS exception_expires_at
  FROM approvals a JOIN organizations o ON o.id = a.org_id LEFT JOIN exceptions e ON e.id = a.exception_id`;

/** One approval of an organization (404 otherwise); times it out first if its deadline passed. */
export async function getApproval(db: Database, orgId: string, approvalId: string) {
  const { rows } = await db.query(`${approvalSelect} WHERE a.id = $1 AND a.org_id = $2`, [approvalId, orgId]);
  if (!rows[0]) throw notFound("Approval");
  return approvalView(rows[0] as ApprovalRow & Record<string, unknown>, rows[0].approval_timeout_hours);
}

/**
 * Query of GET /v1/chains/{chain_id}/approval-status. `wait` (seconds, 0..5, beyond the spec)
 * holds the request while the approval is pending (approval-waiters.ts); absent or 0 answers at
 * once, as the spec's plain poll.
 */
export const ApprovalStatusQuerySchema = z.object({
  approval_id: z.uuid().optional(),
  wait: z.coerce.number().min(0).max(MAX_APPROVAL_WAIT_SECONDS).optional(),
});

/**
 * GET /v1/chains/{chain_id}/approval-status: the chain's status and its latest (or the given)
 * approval. A pending approval past its deadline is timed out on read, so callers never wait
 * on a missed timer.
 */
export async function approvalStatus(
  db: Database,
  opts: { orgId: string; chainId: string; approvalId?: string; clock: Clock; keys?: SigningKeys },
) {
  const nowMs = opts.clock.nowMs();
  const chain = await db.query<ChainRow>("SELECT * FROM chains WHERE id = $1 AND org_id = $2", [
    opts.chainId,
    opts.orgId,
  ]);
  if (!chain.rows[0]) throw notFound("Chain");
  const { rows } = await db.query(
    `${approvalSelect} WHERE a.chain_id = $1 ${opts.approvalId ? "AND a.id = $2" : ""} ORDER BY a.requested_at DESC LIMIT 1`,
    opts.approvalId ? [opts.chainId, opts.approvalId] : [opts.chainId],
  );
  const row = rows[0];
  if (opts.approvalId && !row) throw notFound("Approval");
  if (row?.status === "pending" && new Date(row.expires_at).getTime() <= nowMs) {
    await timeoutApprovalJob(db, row.id, nowMs, opts.keys);
    return approvalStatus(db, opts);
  }
  return {
    chain_id: opts.chainId,
    chain_status: chain.rows[0].status,
    approval: row
      ? approvalView(row as ApprovalRow & Record<string, unknown>, row.approval_timeout_hours)
      : null,
  };
}

/** Approvals of an organization, newest first, optionally by status, with their action. */
export async function listApprovals(
  db: Database,
  orgId: string,
  opts: { status?: ApprovalStatus; limit?: number } = {},
) {
  const { rows } = await db.query(
    `${approvalSelect.replace("SELECT a.*", "SELECT a.*, c.name AS chain_name, ev.agent_name, ev.action_type, ev.action_name, ev.payload, c.financial_exposure_usd, c.external_communications_count, c.records_modified_count, c.domains_contacted, c.estimated_cost_usd")}
     JOIN chains c ON c.id = a.chain_id JOIN chain_events ev ON ev.id = a.event_id
     WHERE a.org_id = $1 ${opts.status ? "AND a.status = $3" : ""} ORDER BY a.requested_at DESC LIMIT $2`,
    opts.status ? [orgId, opts.limit ?? 100, opts.status] : [orgId, opts.limit ?? 100],
  );
  return rows.map((r) => ({
    ...approvalView(r as ApprovalRow & Record<string, unknown>, r.approval_timeout_hours),
    chain_name: r.chain_name,
    agent_name: r.agent_name,
    action_type: r.action_type,
    action_name: r.action_name,
    payload: r.payload,
    cumulative_metrics: cumulativeMetrics(r as ChainRow),
  }));
}
