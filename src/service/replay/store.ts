/**
 * The reads of a replay (issue 28, "Replay before enforce"): the organization's chains with
 * events in a window, their events in sequence order, and the exceptions that were active in the
 * window. All of its SQL; it only reads (replay.ts runs it in a READ ONLY transaction).
 */
import type { ActiveException, PolicyDecision, WorkloadIdentity } from "../../policy/schema.js";
import type { MetricsDelta } from "../chains/counters.js";
import type { Queryable } from "../db/pool.js";

/** A chain to replay: its id, when it opened (epoch ms) and its own policy_config patch. */
export interface ReplayChainRow {
  id: string;
  started_at_ms: number;
  policy_config: Record<string, unknown>;
}

/** One recorded event as replay reads it. Times in epoch milliseconds. */
export interface ReplayEventRow {
  id: string;
  chain_id: string;
  sequence: number;
  agent_name: string;
  parent_agent_name: string | null;
  action_type: string;
  action_name: string;
  /** The sanitized payload the engine saw. */
  payload: Record<string, unknown>;
  /** The stored facts (chains/record.ts storedFacts): only `metrics_delta` is read here. */
  facts: { metrics_delta?: MetricsDelta };
  /**
   * The fields of the event's decision as stored now that replay reads (a resolved approval
   * overwrote it: decision_source human_approval).
   */
  decision: Pick<
    PolicyDecision,
    | "policy_decision"
    | "decision_source"
    | "policy_name"
    | "decision_reason"
    | "kill_switch_active"
    | "pause_reason"
  >;
  exception_id: string | null;
  approval_id: string | null;
  recorded_at_ms: number;
  principal: WorkloadIdentity | null;
  /** The organization's environment when recorded; null for events recorded before migration 005. */
  org_environment: string | null;
}

/** An exception with the times it was in force (epoch ms): [created_at, min(expires_at, revoked_at)). */
export interface ReplayException extends ActiveException {
  created_at_ms: number;
  revoked_at_ms: number | null;
}

/**
 * The next `limit` chains of the organization (by id, after `afterId`) that have at least one
 * event recorded in [from, to).
 */
export async function chainsWithEventsIn(
  q: Queryable,
  opts: { orgId: string; from: Date; to: Date; afterId: string; limit: number },
): Promise<ReplayChainRow[]> {
  const { rows } = await q.query(
    `SELECT c.id, c.started_at, c.policy_config FROM chains c
     WHERE c.org_id = $1 AND c.started_at < $3 AND (c.completed_at IS NULL OR c.completed_at >= $2) AND c.id > $4
       AND EXISTS (SELECT 1 FROM chain_events e WHERE e.chain_id = c.id AND e.recorded_at >= $2 AND e.recorded_at < $3)
     ORDER BY c.id LIMIT $5`,
    [opts.orgId, opts.from, opts.to, opts.afterId, opts.limit],
  );
  return rows.map((r) => ({
    id: r.id as string,
    started_at_ms: new Date(r.started_at).getTime(),
    policy_config: (r.policy_config ?? {}) as Record<string, unknown>,
  }));
}

/**
 * The events of `chainIds` recorded before `to`, in chain id and sequence order, at most `limit`
 * (those before the window too: they rebuild each chain's state).
 */
export async function eventsOfChains(
  q: Queryable,
  opts: { chainIds: string[]; to: Date; limit: number },
): Promise<ReplayEventRow[]> {
  const { rows } = await q.query(
    // Only the decision fields replay reads, as text: parsing each whole stored decision cost
    // more than deciding again.
    `SELECT id, chain_id, sequence, agent_name, parent_agent_name, action_type, action_name, payload,
       facts->'metrics_delta' AS metrics_delta, decision->>'policy_decision' AS policy_decision,
       decision->>'decision_source' AS decision_source, decision->>'policy_name' AS policy_name,
       decision->>'decision_reason' AS decision_reason, decision->>'kill_switch_active' AS kill_switch_active,
       decision->>'pause_reason' AS pause_reason, exception_id, approval_id, recorded_at, principal, org_environment
     FROM chain_events WHERE chain_id = ANY($1::uuid[]) AND recorded_at < $2
     ORDER BY chain_id, sequence LIMIT $3`,
    [`{${opts.chainIds.join(",")}}`, opts.to, opts.limit],
  );
  return rows.map((r) => ({
    id: r.id,
    chain_id: r.chain_id,
    sequence: r.sequence,
    agent_name: r.agent_name,
    parent_agent_name: r.parent_agent_name,
    action_type: r.action_type,
    action_name: r.action_name,
    payload: r.payload,
    facts: r.metrics_delta ? { metrics_delta: r.metrics_delta } : {},
    decision: {
      policy_decision: r.policy_decision,
      decision_source: r.decision_source,
      policy_name: r.policy_name,
      decision_reason: r.decision_reason,
      kill_switch_active: r.kill_switch_active === "true",
      pause_reason: r.pause_reason,
    },
    exception_id: r.exception_id,
    approval_id: r.approval_id,
    recorded_at_ms: new Date(r.recorded_at).getTime(),
    principal: r.principal ?? null,
    org_environment: r.org_environment ?? null,
  }));
}

/** The organization's exceptions that were in force at some instant of [from, to), revoked ones included. */
export async function exceptionsInForce(
  q: Queryable,
  opts: { orgId: string; from: Date; to: Date },
): Promise<ReplayException[]> {
  const { rows } = await q.query(
    `SELECT id, agent_name, action_type, destination_domain, created_at, expires_at, revoked_at FROM exceptions
     WHERE org_id = $1 AND created_at < $3 AND expires_at > $2 AND (revoked_at IS NULL OR revoked_at > $2)
     ORDER BY created_at, id`,
    [opts.orgId, opts.from, opts.to],
  );
  return rows.map((r) => ({
    exception_id: r.id,
    agent_name: r.agent_name,
    action_type: r.action_type,
    destination_domain: r.destination_domain,
    expires_at_ms: new Date(r.expires_at).getTime(),
    created_at_ms: new Date(r.created_at).getTime(),
    revoked_at_ms: r.revoked_at ? new Date(r.revoked_at).getTime() : null,
  }));
}
