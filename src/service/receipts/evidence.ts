/**
 * Reads the evidence of chains from storage: each chain's events as the canonical records the
 * event hash chain covers (src/receipts/event-chain.ts), and its approvals as records with their
 * Ed25519 attestations (src/receipts/approval-record.ts). Used when a receipt is built (the
 * hashes are computed then, off the recording hot path: docs/adr/0007), when a receipt is
 * verified, for the chain view, and for the offline export.
 */
import type { ApprovalRecord } from "../../receipts/approval-record.js";
import type { EventRecord } from "../../receipts/event-chain.js";
import { type AttestedApprovalRow, approvalRecordOf, attestationSelect } from "../approvals/attestation.js";
import type { Queryable } from "../db/pool.js";

/** A chain_events row with the columns an event record needs. */
interface EventRow {
  id: string;
  chain_id: string;
  sequence: number;
  agent_name: string;
  parent_agent_name: string | null;
  action_type: string;
  action_name: string;
  category: string;
  payload: Record<string, unknown>;
  decision: Record<string, unknown>;
  exception_id: string | null;
  approval_id: string | null;
  outcome: EventRecord["outcome"];
  recorded_at: Date;
  principal: EventRecord["principal"] | null;
}

/** The event record of a stored row: exactly the values the row holds now. */
export function eventRecordOf(r: EventRow): EventRecord {
  return {
    chain_id: r.chain_id,
    sequence: r.sequence,
    event_id: r.id,
    agent_name: r.agent_name,
    parent_agent_name: r.parent_agent_name,
    action_type: r.action_type,
    action_name: r.action_name,
    category: r.category,
    payload: r.payload as EventRecord["payload"],
    decision: r.decision as EventRecord["decision"],
    exception_id: r.exception_id,
    approval_id: r.approval_id,
    outcome: r.outcome ?? null,
    recorded_at: new Date(r.recorded_at).toISOString(),
    // Only when recorded: an event without identity hashes as it did before identities existed.
    ...(r.principal && { principal: r.principal }),
  };
}

/**
 * The stored events of `chainIds` as records, per chain in sequence order (chains without
 * events are absent from the map).
 */
export async function loadEventRecords(
  q: Queryable,
  chainIds: readonly string[],
): Promise<Map<string, EventRecord[]>> {
  const byChain = new Map<string, EventRecord[]>();
  if (chainIds.length === 0) return byChain;
  const { rows } = await q.query<EventRow>(
    `SELECT id, chain_id, sequence, agent_name, parent_agent_name, action_type, action_name, category, payload,
       decision, exception_id, approval_id, outcome, recorded_at, principal
     FROM chain_events WHERE chain_id = ANY($1::uuid[]) ORDER BY chain_id, sequence`,
    [chainIds],
  );
  for (const row of rows) {
    const list = byChain.get(row.chain_id) ?? [];
    list.push(eventRecordOf(row));
    byChain.set(row.chain_id, list);
  }
  return byChain;
}

/**
 * The stored approvals of `chainIds` as records (current columns, recorded kid and signature),
 * per chain in the order of their events, as the receipt lists them.
 */
export async function loadApprovalRecords(
  q: Queryable,
  chainIds: readonly string[],
): Promise<Map<string, ApprovalRecord[]>> {
  const byChain = new Map<string, ApprovalRecord[]>();
  if (chainIds.length === 0) return byChain;
  const { rows } = await q.query<AttestedApprovalRow>(
    `${attestationSelect} LEFT JOIN chain_events ev ON ev.id = a.event_id
     WHERE a.chain_id = ANY($1::uuid[]) ORDER BY a.chain_id, ev.sequence NULLS LAST, a.requested_at, a.id`,
    [chainIds],
  );
  for (const row of rows) {
    const list = byChain.get(row.chain_id) ?? [];
    list.push(approvalRecordOf(row));
    byChain.set(row.chain_id, list);
  }
  return byChain;
}

/** Loads an approval row of the organization with its attestation columns; null when absent. */
export async function findApprovalRow(
  q: Queryable,
  orgId: string,
  approvalId: string,
): Promise<AttestedApprovalRow | null> {
  const { rows } = await q.query<AttestedApprovalRow>(
    `${attestationSelect} WHERE a.id = $1 AND a.org_id = $2`,
    [approvalId, orgId],
  );
  return rows[0] ?? null;
}

/** The resolved approvals of a chain as its receipt lists them, in event order. */
export async function loadReceiptApprovals(q: Queryable, chainId: string) {
  const { rows } = await q.query(
    `SELECT a.id, a.event_id, a.status, a.decided_by, a.notes, a.decided_at, a.exception_id,
       e.duration, e.expires_at AS exception_expires_at, ev.agent_name, ev.action_type, ev.action_name
     FROM approvals a JOIN chain_events ev ON ev.id = a.event_id LEFT JOIN exceptions e ON e.id = a.exception_id
     WHERE a.chain_id = $1 AND a.status <> 'pending' ORDER BY ev.sequence, a.requested_at, a.id`,
    [chainId],
  );
  return rows;
}
