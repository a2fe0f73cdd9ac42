/**
 * The reads of a replay (issue 28, "Replay before enforce"): the organization's chains with
 * events in a window, their events in sequence order, and the exceptions that were active in the
 * window. All of its SQL; it only reads (replay-policy.ts runs it in a READ ONLY transaction).
 */
import type { ActiveException, PolicyDecision, WorkloadIdentity } from "../../policy/schema.js";
import type { MetricsDelta } from "../chains/counters.js";
import type { PreparedStatement, Queryable } from "../db/pool.js";

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
 * One chain of a page as PostgreSQL builds it: a JSON array in the columns of
 * {@link ChainColumn}, its events (rows in the columns of {@link EventColumn}, in sequence order)
 * last. The chain's fields come once per chain, not once per event.
 */
export type ReplayPageChain = unknown[];

/** One event of a {@link ReplayPageChain}: its JSON columns (payload, metrics delta, principal) already values. */
export type ReplayRow = unknown[];

/** The columns of a {@link ReplayPageChain}. */
export const ChainColumn = {
  id: 0,
  startedAtMs: 1,
  /** The chain's policy_config as JSON text (the key replay memoizes merged configurations by). */
  policyConfig: 2,
  events: 3,
} as const;

/** The columns of a {@link ReplayRow}, in the order REPLAY_PAGE builds them. */
export const EventColumn = {
  id: 0,
  sequence: 1,
  agentName: 2,
  parentAgentName: 3,
  actionType: 4,
  actionName: 5,
  payload: 6,
  metricsDelta: 7,
  policyDecision: 8,
  decisionSource: 9,
  policyName: 10,
  killSwitchReason: 11,
  killSwitchActive: 12,
  pauseReason: 13,
  approvalId: 14,
  recordedAtMs: 15,
  principal: 16,
  orgEnvironment: 17,
} as const;

/**
 * One page of a replay's reads, as PostgreSQL sends it: `events` events of chains in id order,
 * each chain's in sequence order, as one JSON array of {@link ReplayPageChain}s (`json`, decoded
 * where the page is decided: {@link chainsOfPage}); `lastChainId` the id of its last chain (where
 * the next page starts), null for an empty page.
 */
export interface ReplayPage {
  events: number;
  lastChainId: string | null;
  json: string;
}

/**
 * The chains of a page's JSON.
 * @throws SyntaxError when `json` is not JSON; TypeError when it is not an array (PostgreSQL built it: never).
 */
export function chainsOfPage(json: string): ReplayPageChain[] {
  const chains: unknown = JSON.parse(json);
  if (!Array.isArray(chains)) throw new TypeError("a replay page is a JSON array of chains");
  return chains as ReplayPageChain[];
}

/** The chain of a page's chain entry. */
export const chainOfPage = (c: ReplayPageChain): ReplayChainRow => ({
  id: c[ChainColumn.id] as string,
  started_at_ms: c[ChainColumn.startedAtMs] as number,
  policy_config: c[ChainColumn.policyConfig] as string,
});

/** The event of a row of chain `chainId`. */
export function eventOfRow(r: ReplayRow, chainId: string): ReplayEventRow {
  const metricsDelta = r[EventColumn.metricsDelta] as MetricsDelta | null;
  return {
    id: r[EventColumn.id] as string,
    chain_id: chainId,
    sequence: r[EventColumn.sequence] as number,
    agent_name: r[EventColumn.agentName] as string,
    parent_agent_name: r[EventColumn.parentAgentName] as string | null,
    action_type: r[EventColumn.actionType] as string,
    action_name: r[EventColumn.actionName] as string,
    payload: r[EventColumn.payload] as Record<string, unknown>,
    facts: metricsDelta ? { metrics_delta: metricsDelta } : {},
    decision: {
      policy_decision: r[EventColumn.policyDecision] as ReplayEventRow["decision"]["policy_decision"],
      decision_source: r[EventColumn.decisionSource] as ReplayEventRow["decision"]["decision_source"],
      policy_name: r[EventColumn.policyName] as string | null,
      kill_switch_reason: r[EventColumn.killSwitchReason] as string | null,
      kill_switch_active: r[EventColumn.killSwitchActive] === "true",
      pause_reason: r[EventColumn.pauseReason] as string | null,
    },
    approval_id: r[EventColumn.approvalId] as string | null,
    recorded_at_ms: r[EventColumn.recordedAtMs] as number,
    principal: r[EventColumn.principal] as WorkloadIdentity | null,
    org_environment: (r[EventColumn.orgEnvironment] as string | null) ?? null,
  };
}

/**
 * Opens a replay's reads in the transaction `q` has just begun: one snapshot (REPEATABLE READ),
 * READ ONLY (the database refuses any write), and custom plans for every page. Why the last:
 * after five executions of a prepared statement PostgreSQL may switch to a generic plan that
 * ignores the page's parameters; for REPLAY_PAGE that plan read pages 3–5 times slower
 * (bench/replay: 100,000 events in 2.4 s on a connection's first replay, 7.6–11 s on later ones).
 * One round trip.
 */
export async function beginReplayReads(q: Queryable): Promise<void> {
  await q.query(
    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; SET LOCAL plan_cache_mode = force_custom_plan",
  );
}

/**
 * The next `chains` chains of the organization (by id, after `afterId`) that have at least one
 * event recorded in [from, to), with their events recorded before `to` (those before the window
 * too: they rebuild each chain's state), in chain id and sequence order, at most `limit` events.
 * One query, one round trip and one row per page: PostgreSQL builds the page as one JSON array
 * of chains, each with its events (one string to receive and hand to the thread that decides
 * it, decoded there by one JSON.parse: cheaper than pg's parsing of a row per event on the
 * thread that serves requests; the chain's columns once per chain),
 * only the columns replay reads, the decision's fields as text (parsing each whole stored
 * decision cost more than deciding again; decision_reason only for the kill switch, the one
 * reason replay reads), times as epoch milliseconds (no date parsing). When fewer than `limit`
 * events come back, every chain of the page is complete.
 */
export async function replayPage(
  q: Queryable,
  opts: { orgId: string; from: Date; to: Date; afterId: string; chains: number; limit: number },
): Promise<ReplayPage> {
  const { rows } = await q.query(REPLAY_PAGE, [
    opts.orgId,
    opts.from,
    opts.to,
    opts.afterId,
    opts.chains,
    opts.limit,
  ]);
  const [events, lastChainId, json] = rows[0] as unknown as [number, string | null, string];
  return { events, lastChainId, json };
}

// Events are limited (LIMIT $6) in chain id and sequence order before they are grouped by chain.
// Canonical uuid text (lowercase hex at fixed places) sorts as the uuid does: max(text) is the
// page's last chain.
const REPLAY_PAGE: PreparedStatement = {
  name: "tg_replay_json_page",
  rowMode: "array",
  text: `WITH page AS (
       SELECT c.id, c.started_at, c.policy_config FROM chains c
       WHERE c.org_id = $1 AND c.started_at < $3 AND (c.completed_at IS NULL OR c.completed_at >= $2) AND c.id > $4
         AND EXISTS (SELECT 1 FROM chain_events e WHERE e.chain_id = c.id AND e.recorded_at >= $2 AND e.recorded_at < $3)
       ORDER BY c.id LIMIT $5),
     rows AS (
       SELECT e.chain_id, e.sequence, json_build_array(e.id, e.sequence, e.agent_name, e.parent_agent_name,
         e.action_type, e.action_name, e.payload, e.facts->'metrics_delta', e.decision->>'policy_decision',
         e.decision->>'decision_source', e.decision->>'policy_name',
         CASE WHEN e.decision->>'policy_name' = 'kill_switch' THEN e.decision->>'decision_reason' END,
         e.decision->>'kill_switch_active', e.decision->>'pause_reason', e.approval_id,
         floor(extract(epoch FROM e.recorded_at) * 1000)::float8, e.principal, e.org_environment) AS row
       FROM page JOIN chain_events e ON e.chain_id = page.id AND e.recorded_at < $3
       ORDER BY e.chain_id, e.sequence LIMIT $6),
     grouped AS (SELECT chain_id, count(*) AS n, json_agg(row ORDER BY sequence) AS events FROM rows GROUP BY chain_id)
     SELECT coalesce(sum(g.n), 0)::int, max(g.chain_id::text),
       coalesce(json_agg(json_build_array(g.chain_id, floor(extract(epoch FROM p.started_at) * 1000)::float8,
         coalesce(p.policy_config, '{}'::jsonb)::text, g.events) ORDER BY g.chain_id), '[]')::text
     FROM grouped g JOIN page p ON p.id = g.chain_id`,
};

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
