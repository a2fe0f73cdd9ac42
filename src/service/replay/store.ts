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
 * One event row as a page carries it: a JSON array in the columns of {@link RowColumn}, its JSON
 * columns (payload, metrics delta, principal) already values, the chain's policy_config as JSON
 * text (the key replay memoizes merged configurations by).
 */
export type ReplayRow = unknown[];

/** The columns of a {@link ReplayRow}, in the order REPLAY_PAGE builds them. */
export const RowColumn = {
  id: 0,
  chainId: 1,
  sequence: 2,
  agentName: 3,
  parentAgentName: 4,
  actionType: 5,
  actionName: 6,
  payload: 7,
  metricsDelta: 8,
  policyDecision: 9,
  decisionSource: 10,
  policyName: 11,
  killSwitchReason: 12,
  killSwitchActive: 13,
  pauseReason: 14,
  approvalId: 15,
  recordedAtMs: 16,
  principal: 17,
  orgEnvironment: 18,
  chainStartedAtMs: 19,
  chainPolicyConfig: 20,
} as const;

/**
 * One page of a replay's reads, as PostgreSQL sends it: `events` rows of chains in id order,
 * each chain's in sequence order, as one JSON array of {@link ReplayRow}s (`json`, decoded where
 * the page is decided: {@link rowsOfPage}); `lastChainId` the id of its last row's chain (where
 * the next page starts), null for an empty page.
 */
export interface ReplayPage {
  events: number;
  lastChainId: string | null;
  json: string;
}

/**
 * The first `keep` rows of a page.
 * @throws SyntaxError when `json` is not JSON (PostgreSQL built it: never).
 */
export function rowsOfPage(json: string, keep: number): ReplayRow[] {
  const rows = JSON.parse(json) as ReplayRow[];
  if (rows.length > keep) rows.length = keep;
  return rows;
}

/** The chain of a row (its id, start and policy_config are on every row of the chain). */
export const chainOfRow = (r: ReplayRow): ReplayChainRow => ({
  id: r[RowColumn.chainId] as string,
  started_at_ms: r[RowColumn.chainStartedAtMs] as number,
  policy_config: r[RowColumn.chainPolicyConfig] as string,
});

/** The event of a row. */
export function eventOfRow(r: ReplayRow): ReplayEventRow {
  const metricsDelta = r[RowColumn.metricsDelta] as MetricsDelta | null;
  return {
    id: r[RowColumn.id] as string,
    chain_id: r[RowColumn.chainId] as string,
    sequence: r[RowColumn.sequence] as number,
    agent_name: r[RowColumn.agentName] as string,
    parent_agent_name: r[RowColumn.parentAgentName] as string | null,
    action_type: r[RowColumn.actionType] as string,
    action_name: r[RowColumn.actionName] as string,
    payload: r[RowColumn.payload] as Record<string, unknown>,
    facts: metricsDelta ? { metrics_delta: metricsDelta } : {},
    decision: {
      policy_decision: r[RowColumn.policyDecision] as ReplayEventRow["decision"]["policy_decision"],
      decision_source: r[RowColumn.decisionSource] as ReplayEventRow["decision"]["decision_source"],
      policy_name: r[RowColumn.policyName] as string | null,
      kill_switch_reason: r[RowColumn.killSwitchReason] as string | null,
      kill_switch_active: r[RowColumn.killSwitchActive] === "true",
      pause_reason: r[RowColumn.pauseReason] as string | null,
    },
    approval_id: r[RowColumn.approvalId] as string | null,
    recorded_at_ms: r[RowColumn.recordedAtMs] as number,
    principal: r[RowColumn.principal] as WorkloadIdentity | null,
    org_environment: (r[RowColumn.orgEnvironment] as string | null) ?? null,
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
 * (one string to receive and hand to the thread that decides it, decoded there by one
 * JSON.parse: cheaper than pg's parsing of a row per event on the thread that serves requests),
 * only the columns replay reads, the decision's fields as text (parsing each whole stored
 * decision cost more than deciding again; decision_reason only for the kill switch, the one
 * reason replay reads), times as epoch milliseconds (no date parsing), the chain's columns on
 * every row (a number and a short text). When fewer than `limit` events come back, every chain
 * of the page is complete.
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
       SELECT e.chain_id, e.sequence, json_build_array(e.id, e.chain_id, e.sequence, e.agent_name, e.parent_agent_name,
         e.action_type, e.action_name, e.payload, e.facts->'metrics_delta', e.decision->>'policy_decision',
         e.decision->>'decision_source', e.decision->>'policy_name',
         CASE WHEN e.decision->>'policy_name' = 'kill_switch' THEN e.decision->>'decision_reason' END,
         e.decision->>'kill_switch_active', e.decision->>'pause_reason', e.approval_id,
         floor(extract(epoch FROM e.recorded_at) * 1000)::float8, e.principal, e.org_environment,
         floor(extract(epoch FROM page.started_at) * 1000)::float8,
         coalesce(page.policy_config, '{}'::jsonb)::text) AS row
       FROM page JOIN chain_events e ON e.chain_id = page.id AND e.recorded_at < $3
       ORDER BY e.chain_id, e.sequence LIMIT $6)
     SELECT count(*)::int, max(chain_id::text), coalesce(json_agg(row ORDER BY chain_id, sequence), '[]')::text FROM rows`,
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
