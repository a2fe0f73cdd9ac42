/**
 * The approval store: every SQL statement on `approvals` rows (spec: "Approval request",
 * "States and transitions"). Resolving an approval writes the approval, its event's decision and
 * its chain's status together and sends the cross-replica wake-up (delivered at COMMIT).
 */
import type { ApprovalStatus } from "../../contract/v1/wire.js";
import type { PolicyDecision, WorkloadIdentity } from "../../policy/schema.js";
import type { MetricsDelta } from "../chains/counters.js";
import type { Queryable } from "../db/pool.js";
import { notFound } from "../errors.js";
import type { ExceptionScope } from "../exceptions/store.js";
import { type ApprovalOutcome, finalDecision } from "./final-decision.js";
import { notifyApprovalChanged } from "./waiters.js";

/** An `approvals` row. */
export interface ApprovalRow {
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
  /** Ed25519 signature of the resolution (attestation.ts); null until signed. */
  signature?: string | null;
}

/** Inserts a pending approval of `eventId` that expires after `timeoutMs` (escalates at half). */
export async function insertApproval(
  q: Queryable,
  a: {
    id: string;
    orgId: string;
    chainId: string;
    eventId: string;
    nowMs: number;
    timeoutMs: number;
    decision: PolicyDecision;
  },
): Promise<void> {
  await q.query(
    `INSERT INTO approvals (id, org_id, chain_id, event_id, status, requested_at, expires_at, escalate_at, requested_decision)
     VALUES ($1,$2,$3,$4,'pending',$5,$6,$7,$8)`,
    [
      a.id,
      a.orgId,
      a.chainId,
      a.eventId,
      new Date(a.nowMs),
      new Date(a.nowMs + a.timeoutMs),
      new Date(a.nowMs + a.timeoutMs / 2),
      a.decision,
    ],
  );
}

/**
 * Locks an approval row (of `orgId` when given) until the transaction ends.
 * @throws ApiError 404 when it does not exist (or belongs to another organization).
 */
export async function lockApproval(q: Queryable, approvalId: string, orgId?: string): Promise<ApprovalRow> {
  const { rows } = await q.query<ApprovalRow>(
    `SELECT * FROM approvals WHERE id = $1 ${orgId ? "AND org_id = $2" : ""} FOR UPDATE`,
    orgId ? [approvalId, orgId] : [approvalId],
  );
  if (!rows[0]) throw notFound("Approval");
  return rows[0];
}

/** Locks an approval row if it exists (job handlers: the row may be gone). */
export async function lockApprovalIfAny(q: Queryable, approvalId: string): Promise<ApprovalRow | undefined> {
  const { rows } = await q.query<ApprovalRow>("SELECT * FROM approvals WHERE id = $1 FOR UPDATE", [
    approvalId,
  ]);
  return rows[0];
}

/** The organization of an approval, or undefined when there is no such approval. */
export async function approvalOrgId(q: Queryable, approvalId: string): Promise<string | undefined> {
  const { rows } = await q.query<{ org_id: string }>("SELECT org_id FROM approvals WHERE id = $1", [
    approvalId,
  ]);
  return rows[0]?.org_id;
}

/** Locks the pending approvals of a chain. */
export async function lockPendingOfChain(q: Queryable, chainId: string): Promise<ApprovalRow[]> {
  const { rows } = await q.query<ApprovalRow>(
    "SELECT * FROM approvals WHERE chain_id = $1 AND status = 'pending' FOR UPDATE",
    [chainId],
  );
  return rows;
}

/**
 * Writes the resolution of an approval — its status and final decision as finalDecision
 * (final-decision.ts) builds them from `outcome` — to the approval, its event and its chain (open
 * again), and sends the cross-replica wake-up of its held approval-status requests (delivered at
 * COMMIT). Callers wake this process's held requests after their transaction commits.
 */
export async function writeResolution(
  q: Queryable,
  a: ApprovalRow,
  r: { outcome: ApprovalOutcome; nowMs: number; exceptionId?: string | null },
): Promise<void> {
  const f = finalDecision(a.requested_decision, r.outcome);
  await q.query(
    `UPDATE approvals SET status = $2, final_decision = $3, decided_by = $4, notes = $5, decided_at = $6, exception_id = $7
     WHERE id = $1`,
    [a.id, f.status, f.decision, f.decidedBy, f.notes, new Date(r.nowMs), r.exceptionId ?? null],
  );
  await q.query("UPDATE chain_events SET decision = $2 WHERE id = $1", [a.event_id, f.decision]);
  await q.query("UPDATE chains SET status = 'open' WHERE id = $1 AND status = 'pending_approval'", [
    a.chain_id,
  ]);
  await notifyApprovalChanged(q, a.chain_id);
}

/** Marks a pending approval escalated at `nowMs`. */
export async function markEscalated(q: Queryable, approvalId: string, nowMs: number): Promise<void> {
  await q.query("UPDATE approvals SET escalated_at = $2 WHERE id = $1", [approvalId, new Date(nowMs)]);
}

/** The organization's approval timeout, in hours (24 when the organization is gone). */
export async function approvalTimeoutHours(q: Queryable, orgId: string): Promise<number> {
  const { rows } = await q.query("SELECT approval_timeout_hours FROM organizations WHERE id = $1", [orgId]);
  return rows[0]?.approval_timeout_hours ?? 24;
}

/** The facts of an event that approving it reads (chains/record.ts storedFacts keeps those that are set). */
export interface ApprovedEventFacts {
  /** Kept by rows written before facts were trimmed; newer rows derive the scope. */
  exception_scope?: ExceptionScope;
  destination_domain?: string | null;
  metrics_delta?: MetricsDelta;
}

/** The approved event's agent, action type and stored facts. */
export async function approvedEvent(
  q: Queryable,
  eventId: string,
): Promise<{ agent_name: string; action_type: string; facts: ApprovedEventFacts }> {
  const { rows } = await q.query<{ agent_name: string; action_type: string; facts: ApprovedEventFacts }>(
    "SELECT agent_name, action_type, facts FROM chain_events WHERE id = $1",
    [eventId],
  );
  return rows[0]!;
}

/** An approval row joined with what its views show: the org's timeout, the granted exception. */
export type ApprovalReadRow = ApprovalRow & {
  approval_timeout_hours: number;
  exception_duration: string | null;
  exception_expires_at: Date | null;
};

/** An approval with the chain and action it gates (the reviewers' list). */
export type ApprovalListRow = ApprovalReadRow & {
  chain_name: string;
  agent_name: string;
  /** The verified workload identity that asked; null for API-key and session callers. */
  principal: WorkloadIdentity | null;
  action_type: string;
  action_name: string;
  payload: unknown;
  financial_exposure_usd: number;
  external_communications_count: number;
  records_modified_count: number;
  domains_contacted: string[];
  estimated_cost_usd: number;
};

const READ_COLUMNS = `a.*, o.approval_timeout_hours, e.duration AS exception_duration, e.expires_at AS exception_expires_at`;
const READ_FROM = `approvals a JOIN organizations o ON o.id = a.org_id LEFT JOIN exceptions e ON e.id = a.exception_id`;

/** One approval of an organization, or undefined. */
export async function readApproval(
  q: Queryable,
  orgId: string,
  approvalId: string,
): Promise<ApprovalReadRow | undefined> {
  const { rows } = await q.query<ApprovalReadRow>(
    `SELECT ${READ_COLUMNS} FROM ${READ_FROM} WHERE a.id = $1 AND a.org_id = $2`,
    [approvalId, orgId],
  );
  return rows[0];
}

/** The chain's latest approval (or the given one of the chain), or undefined. */
export async function readChainApproval(
  q: Queryable,
  chainId: string,
  approvalId?: string,
): Promise<ApprovalReadRow | undefined> {
  const { rows } = await q.query<ApprovalReadRow>(
    `SELECT ${READ_COLUMNS} FROM ${READ_FROM}
     WHERE a.chain_id = $1 ${approvalId ? "AND a.id = $2" : ""} ORDER BY a.requested_at DESC LIMIT 1`,
    approvalId ? [chainId, approvalId] : [chainId],
  );
  return rows[0];
}

/** Approvals of an organization, newest first, optionally by status, with their chain and action. */
export async function listApprovalRows(
  q: Queryable,
  orgId: string,
  opts: { status?: ApprovalStatus; limit: number },
): Promise<ApprovalListRow[]> {
  const { rows } = await q.query<ApprovalListRow>(
    `SELECT ${READ_COLUMNS}, c.name AS chain_name, ev.agent_name, ev.action_type, ev.action_name, ev.payload,
       ev.principal, c.financial_exposure_usd, c.external_communications_count, c.records_modified_count, c.domains_contacted,
       c.estimated_cost_usd
     FROM ${READ_FROM} JOIN chains c ON c.id = a.chain_id JOIN chain_events ev ON ev.id = a.event_id
     WHERE a.org_id = $1 ${opts.status ? "AND a.status = $3" : ""} ORDER BY a.requested_at DESC LIMIT $2`,
    opts.status ? [orgId, opts.limit, opts.status] : [orgId, opts.limit],
  );
  return rows;
}

/** An approval of a chain with its exception. */
export interface ChainApproval {
  approval_id: string;
  event_id: string;
  status: string;
  requested_at: Date;
  expires_at: Date;
  decided_at: Date | null;
  decided_by: string | null;
  notes: string | null;
  exception_id: string | null;
  duration: string | null;
  exception_expires_at: Date | null;
}

/** Approvals of a chain (chain page), oldest first, with the exception each granted. */
export async function chainApprovals(q: Queryable, chainId: string): Promise<ChainApproval[]> {
  const { rows } = await q.query<ChainApproval>(
    `SELECT a.id AS approval_id, a.event_id, a.status, a.requested_at, a.expires_at, a.decided_at, a.decided_by, a.notes,
       a.exception_id, e.duration, e.expires_at AS exception_expires_at
     FROM approvals a LEFT JOIN exceptions e ON e.id = a.exception_id WHERE a.chain_id = $1 ORDER BY a.requested_at`,
    [chainId],
  );
  return rows;
}
