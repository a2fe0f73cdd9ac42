/**
 * The reads of a replay (issue 28, "Replay before enforce"): the organization's chains with
 * events in a window, their events in sequence order, and the exceptions that were active in the
 * window. All of its SQL; it only reads (replay.ts runs it in a READ ONLY transaction).
 */
import type { ActiveException, PolicyDecision, WorkloadIdentity } from "../../policy/schema.js";
import type { MetricsDelta } from "../chains/counters.js";
import type { Queryable } from "../db/pool.js";

/** A chain to replay: its id, when it opened (epoch ms) and its own policy_config patch (JSON text). */
export interface ReplayChainRow {
  id: string;
  started_at_ms: number;
  /** The chain's policy_config as JSON text (the key replay memoizes merged configurations by). */
  policy_config: string;
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
   * overwrote it: decision_source human_approval), and its decision_reason when the kill switch
   * decided it (the kill switch's reason; other reasons are not read).
   */
  decision: Pick<
    PolicyDecision,
    "policy_decision" | "decision_source" | "policy_name" | "kill_switch_active" | "pause_reason"
  > & { kill_switch_reason: string | null };
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

/** One page of a replay's reads: chains in id order, and their events in chain and sequence order. */
export interface ReplayPage {
  chains: ReplayChainRow[];
  events: ReplayEventRow[];
}

/**
 * The next `chains` chains of the organization (by id, after `afterId`) that have at least one
 * event recorded in [from, to), with their events recorded before `to` (those before the window
 * too: they rebuild each chain's state), in chain id and sequence order, at most `limit` events.
 * One query and one round trip per page: only the columns replay reads, the decision's fields
 * as text (parsing each whole stored decision cost more than deciding again; decision_reason
 * only for the kill switch, the one reason replay reads), times as epoch
 * milliseconds (no date parsing), the chain's columns on every row (a number and a short text).
 * When fewer than `limit` events come back, every chain of the page is complete.
 */
export async function replayPage(
  q: Queryable,
  opts: { orgId: string; from: Date; to: Date; afterId: string; chains: number; limit: number },
): Promise<ReplayPage> {
  const { rows } = await q.query(
    `WITH page AS (
       SELECT c.id, c.started_at, c.policy_config FROM chains c
       WHERE c.org_id = $1 AND c.started_at < $3 AND (c.completed_at IS NULL OR c.completed_at >= $2) AND c.id > $4
         AND EXISTS (SELECT 1 FROM chain_events e WHERE e.chain_id = c.id AND e.recorded_at >= $2 AND e.recorded_at < $3)
       ORDER BY c.id LIMIT $5)
     SELECT e.id, e.chain_id, e.sequence, e.agent_name, e.parent_agent_name, e.action_type, e.action_name, e.payload,
       e.facts->'metrics_delta' AS metrics_delta, e.decision->>'policy_decision' AS policy_decision,
       e.decision->>'decision_source' AS decision_source, e.decision->>'policy_name' AS policy_name,
       CASE WHEN e.decision->>'policy_name' = 'kill_switch' THEN e.decision->>'decision_reason' END AS kill_switch_reason,
       e.decision->>'kill_switch_active' AS kill_switch_active,
       e.decision->>'pause_reason' AS pause_reason, e.exception_id, e.approval_id,
       floor(extract(epoch FROM e.recorded_at) * 1000)::float8 AS recorded_at_ms, e.principal, e.org_environment,
       floor(extract(epoch FROM page.started_at) * 1000)::float8 AS chain_started_at_ms,
       coalesce(page.policy_config, '{}'::jsonb)::text AS chain_policy_config
     FROM page JOIN chain_events e ON e.chain_id = page.id AND e.recorded_at < $3
     ORDER BY e.chain_id, e.sequence LIMIT $6`,
    [opts.orgId, opts.from, opts.to, opts.afterId, opts.chains, opts.limit],
  );
  const chains: ReplayChainRow[] = [];
  const events: ReplayEventRow[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    if (chains.length === 0 || chains[chains.length - 1]!.id !== r.chain_id) {
      chains.push({
        id: r.chain_id,
        started_at_ms: r.chain_started_at_ms,
        policy_config: r.chain_policy_config,
      });
    }
    events[i] = {
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
        kill_switch_reason: r.kill_switch_reason,
        kill_switch_active: r.kill_switch_active === "true",
        pause_reason: r.pause_reason,
      },
      exception_id: r.exception_id,
      approval_id: r.approval_id,
      recorded_at_ms: r.recorded_at_ms,
      principal: r.principal ?? null,
      org_environment: r.org_environment ?? null,
    };
  }
  return { chains, events };
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
