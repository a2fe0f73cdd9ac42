/**
 * The chain store: every SQL statement that reads or writes `chains` and `chain_events` rows
 * for recording (spec: "Chain", "Recorded action"). Recording (record.ts) and approvals
 * (approvals/decide.ts) both advance a chain through {@link advanceSetSql}, the SQL form of
 * counters.ts `advanceChain`; events are inserted only by {@link writeEvents}.
 */
import type { ChainEventSchema, WireOf } from "../../contract/v1/chains.js";
import type { ChainLifecycle, EventOutcome } from "../../contract/v1/wire.js";
import type { ChainActionSummary, PolicyDecision, WorkloadIdentity } from "../../policy/schema.js";
import type { PreparedStatement, Queryable } from "../db/pool.js";
import { notFound, unauthorized } from "../errors.js";
import type { Organization } from "../orgs/orgs.js";
import type { ChainAdvance, MetricsDelta } from "./counters.js";

/** A `chains` row. Amounts in USD; timestamps as the driver returns them. */
export interface ChainRow {
  id: string;
  org_id: string;
  name: string;
  metadata: Record<string, unknown>;
  policy_config: Record<string, unknown>;
  environment: string;
  status: ChainLifecycle;
  failure: { mode: string; message: string } | null;
  started_at: Date;
  completed_at: Date | null;
  event_count: number;
  total_tokens: number;
  financial_exposure_usd: number;
  external_comm_agents: string[];
  external_communications_count: number;
  records_modified_count: number;
  domains_contacted: string[];
  estimated_cost_usd: number;
  receipt_id: string | null;
  /** The verified workload identity that opened the chain; null for API-key and session callers. */
  principal: WorkloadIdentity | null;
}

/** The values of a new chain row (already redacted and sanitized by the caller). */
export interface NewChain {
  id: string;
  orgId: string;
  name: string;
  metadata: Record<string, unknown>;
  policyConfig: Record<string, unknown>;
  environment: string;
  startedAt: Date;
  createdBy: string;
  principal: WorkloadIdentity | null;
}

/** Inserts an open chain and returns its row. */
export async function insertChain(q: Queryable, c: NewChain): Promise<ChainRow> {
  const { rows } = await q.query<ChainRow>(
    `INSERT INTO chains (id, org_id, name, metadata, policy_config, environment, status, started_at, created_by,
       principal)
     VALUES ($1,$2,$3,$4,$5,$6,'open',$7,$8,$9) RETURNING *`,
    [c.id, c.orgId, c.name, c.metadata, c.policyConfig, c.environment, c.startedAt, c.createdBy, c.principal],
  );
  return rows[0]!;
}

/**
 * Loads a chain of an organization (row-locked with `forUpdate`).
 * @throws ApiError 404 when it does not exist or belongs to another organization.
 */
export async function getChain(
  q: Queryable,
  orgId: string,
  chainId: string,
  forUpdate = false,
): Promise<ChainRow> {
  const { rows } = await q.query<ChainRow>(
    `SELECT * FROM chains WHERE id = $1 AND org_id = $2${forUpdate ? " FOR UPDATE" : ""}`,
    [chainId, orgId],
  );
  if (!rows[0]) throw notFound("Chain");
  return rows[0];
}

/**
 * A chain as recording decides on it: the row, its version (`xmin`, the transaction id of the
 * row's current version, as text), and its organization read in the same statement.
 */
export interface ChainSnapshot {
  row: ChainStateRow;
  xmin: string;
  org: Organization;
}

/**
 * The columns of a chain that deciding and advancing it read (the engine's chain state, the
 * counters, the status and the chain's own policy): fewer columns cost the driver less per read
 * (pg describes and parses every column of every row it gets; with `c.*`, describing and
 * parsing this read was ~13% of the service's CPU per decide-only request).
 */
export type ChainStateRow = Pick<ChainRow, (typeof STATE_COLUMNS)[number]>;
const STATE_COLUMNS = [
  "id",
  "org_id",
  "policy_config",
  "status",
  "started_at",
  "event_count",
  "total_tokens",
  "estimated_cost_usd",
  "financial_exposure_usd",
  "external_comm_agents",
  "external_communications_count",
  "records_modified_count",
  "domains_contacted",
] as const satisfies readonly (keyof ChainRow)[];

const snapshotSql = (lock: string) => `SELECT ${STATE_COLUMNS.map((c) => `c.${c}`).join(", ")},
       c.xmin::text AS row_xmin, to_jsonb(o.*) AS org,
       $3::uuid IS NULL OR EXISTS (SELECT 1 FROM api_keys k WHERE k.id = $3 AND k.revoked_at IS NULL) AS key_ok
     FROM chains c JOIN organizations o ON o.id = c.org_id WHERE c.id = $1 AND c.org_id = $2${lock}`;
const READ_SNAPSHOT: PreparedStatement = { name: "tg_read_chain_state", text: snapshotSql("") };
const LOCK_SNAPSHOT: PreparedStatement = {
  name: "tg_lock_chain_state",
  text: snapshotSql(" FOR UPDATE OF c"),
};

/**
 * Reads a chain with its organization and row version in one statement; `lock` holds the chain
 * row until the caller's transaction ends (a row lock leaves `xmin` as it is).
 * @throws ApiError 404 unknown chain; 401 when `keyId` names a revoked API key.
 */
export async function readChainSnapshot(
  q: Queryable,
  opts: { orgId: string; chainId: string; keyId: string | null; lock?: boolean },
): Promise<ChainSnapshot> {
  const { rows } = await q.query(opts.lock ? LOCK_SNAPSHOT : READ_SNAPSHOT, [
    opts.chainId,
    opts.orgId,
    opts.keyId,
  ]);
  const row = rows[0];
  if (!row) throw notFound("Chain");
  if (!row.key_ok) throw unauthorized("The API key or session is invalid or revoked");
  const { row_xmin, org, key_ok: _, ...chain } = row;
  return { row: chain as ChainStateRow, xmin: row_xmin as string, org: org as Organization };
}

/** Inputs of {@link advanceSetSql}, named as the columns of the batch's recordset. */
export type AdvanceInput = "seq" | "status" | "tokens" | "cost" | "fin" | "ext" | "rec" | "domains" | "agent";

/**
 * The SET list that advances a chain (counters.ts `advanceChain` in SQL). `v(input)` is the SQL
 * of an input (a recordset column, a typed parameter); `cur` prefixes the row's current values
 * (`c.` when the UPDATE aliases chains). With `metricsOnly`, only the metrics an allowed action
 * adds (an approval adds them to a chain whose event was already counted).
 */
export function advanceSetSql(v: (input: AdvanceInput) => string, cur = "", metricsOnly = false): string {
  const metrics = `financial_exposure_usd = ${cur}financial_exposure_usd + ${v("fin")},
    external_communications_count = ${cur}external_communications_count + ${v("ext")},
    records_modified_count = ${cur}records_modified_count + ${v("rec")},
    domains_contacted = CASE WHEN cardinality(${v("domains")}) = 0 THEN ${cur}domains_contacted
      ELSE ARRAY(SELECT DISTINCT unnest(${cur}domains_contacted || ${v("domains")})) END,
    external_comm_agents = CASE WHEN ${v("ext")} > 0 AND NOT (${v("agent")} = ANY(${cur}external_comm_agents))
      THEN array_append(${cur}external_comm_agents, ${v("agent")}) ELSE ${cur}external_comm_agents END`;
  if (metricsOnly) return metrics;
  return `event_count = ${v("seq")},
    status = ${v("status")},
    total_tokens = ${cur}total_tokens + ${v("tokens")},
    estimated_cost_usd = ${cur}estimated_cost_usd + ${v("cost")},
    ${metrics}`;
}

/** One `chain_events` row as recording writes it (snake_case: its columns). */
export interface EventRow {
  id: string;
  org_id: string;
  parent_agent_name: string | null;
  action_type: string;
  action_name: string;
  payload: unknown;
  category: string;
  facts: unknown;
  decision: unknown;
  triggers: unknown;
  exception_id: string | null;
  approval_id: string | null;
  recorded_at: string;
  /** The verified workload identity recording it; null for API-key and session callers. */
  principal: WorkloadIdentity | null;
  /** The organization's environment label the engine decided with (CEL `org.environment`; replay reads it). */
  org_environment: string;
}

/**
 * One guarded write: the chain state it was decided on (the guards), how it advances the chain,
 * and the event it inserts. Nothing is written when a guard no longer holds.
 */
export interface GuardedWrite {
  chainId: string;
  /** Guards: the chain row version and the organization state the decision was made under. */
  xmin: string;
  orgId: string;
  configVersion: string;
  killSwitchActive: boolean;
  paused: boolean;
  /** The recording API key, re-checked for revocation; null for user sessions. */
  keyId: string | null;
  advance: ChainAdvance;
  event: EventRow;
}

// `c.id = ANY($2)` names the batch's chains to the planner: without it, the generic plan made
// while the chains table was small joined by rescanning the whole batch once per chain row
// (1.75 ms per 5-row batch in the bench; 0.6 ms with it). RETURNING gives only the chain row's
// new version: the guards made sure the row was the one the caller remembers, so the caller
// computes the new counters itself (counters.ts advanceChain) instead of parsing them back.
// The organization and key guards are evaluated once per row in b: joined with the chains
// they ran once per (chain, row) pair of the nested loop — 16² times for 16 rows.
const WRITE_EVENTS: PreparedStatement = {
  name: "tg_record_batch",
  text: `
WITH b AS (
  SELECT r.*,
    EXISTS (SELECT 1 FROM organizations o WHERE o.id = r.org_id AND o.config_version = r.config_version
        AND o.kill_switch_active = r.kill AND o.paused = r.paused)
      AND (r.key_id IS NULL OR EXISTS (SELECT 1 FROM api_keys k WHERE k.id = r.key_id AND k.revoked_at IS NULL))
      AS org_and_key_ok
  FROM jsonb_to_recordset($1::jsonb) AS r(
    ord int, chain_id uuid, xmin xid, org_id uuid, config_version text, kill boolean, paused boolean,
    key_id uuid, seq int, status text, tokens bigint, cost double precision, fin double precision,
    ext int, rec int, domains text[], agent text, event_id uuid, parent_agent_name text,
    action_type text, action_name text, payload jsonb, category text, facts jsonb, decision jsonb,
    triggers jsonb, exception_id uuid, approval_id uuid, recorded_at timestamptz, principal jsonb,
    org_environment text)
),
advanced AS (
  UPDATE chains c SET ${advanceSetSql((input) => `b.${input}`, "c.")}
  FROM b
  WHERE c.id = ANY($2::uuid[]) AND c.id = b.chain_id AND c.xmin = b.xmin AND c.event_count = b.seq - 1
    AND c.status = 'open' AND b.org_and_key_ok
  RETURNING b.ord, c.xmin::text AS row_xmin
),
inserted AS (
  INSERT INTO chain_events (id, chain_id, org_id, sequence, agent_name, parent_agent_name, action_type,
    action_name, payload, category, facts, decision, triggers, exception_id, approval_id, recorded_at, principal,
    org_environment)
  SELECT b.event_id, b.chain_id, b.org_id, b.seq, b.agent, b.parent_agent_name, b.action_type,
    b.action_name, b.payload, b.category, b.facts, b.decision, b.triggers, b.exception_id, b.approval_id,
    b.recorded_at, b.principal, b.org_environment
  FROM b JOIN advanced a ON a.ord = b.ord
)
SELECT * FROM advanced`,
};

const toRecord = (w: GuardedWrite, ord: number) => ({
  ord,
  chain_id: w.chainId,
  xmin: w.xmin,
  org_id: w.orgId,
  config_version: w.configVersion,
  kill: w.killSwitchActive,
  paused: w.paused,
  key_id: w.keyId,
  seq: w.advance.sequence,
  status: w.advance.status,
  tokens: w.advance.tokens,
  cost: w.advance.costUsd,
  fin: w.advance.financialExposureUsd,
  ext: w.advance.externalCommunications,
  rec: w.advance.recordsModified,
  domains: w.advance.domains,
  agent: w.advance.agentName,
  event_id: w.event.id,
  parent_agent_name: w.event.parent_agent_name,
  action_type: w.event.action_type,
  action_name: w.event.action_name,
  payload: w.event.payload,
  category: w.event.category,
  facts: w.event.facts,
  decision: w.event.decision,
  triggers: w.event.triggers,
  exception_id: w.event.exception_id,
  approval_id: w.event.approval_id,
  recorded_at: w.event.recorded_at,
  principal: w.event.principal,
  org_environment: w.event.org_environment,
});

/**
 * Advances the chains and inserts the events of guarded writes in one statement; returns, per
 * write in order, the chain row's new version (`xmin`) or null when its guards failed (nothing
 * of it written). Throws what the database throws.
 */
export async function writeEvents(q: Queryable, writes: GuardedWrite[]): Promise<(string | null)[]> {
  // The chain ids go as an array literal: uuids need no escaping, and pg's per-element escaping
  // showed in the profile.
  const { rows } = await q.query(WRITE_EVENTS, [
    JSON.stringify(writes.map(toRecord)),
    `{${writes.map((w) => w.chainId).join(",")}}`,
  ]);
  const versions: (string | null)[] = writes.map(() => null);
  for (const row of rows) versions[row.ord] = row.row_xmin;
  return versions;
}

/**
 * Adds an approved action's metrics (`delta`, the engine's metrics delta of its event) to its
 * chain: the event was counted when recorded; its metrics wait for the approval.
 */
export async function addApprovedMetrics(
  q: Queryable,
  chainId: string,
  delta: MetricsDelta,
  agentName: string,
): Promise<void> {
  const param: Partial<Record<AdvanceInput, string>> = {
    fin: "$2::float8",
    ext: "$3::int",
    rec: "$4::int",
    domains: "$5::text[]",
    agent: "$6::text",
  };
  await q.query(`UPDATE chains SET ${advanceSetSql((i) => param[i]!, "", true)} WHERE id = $1`, [
    chainId,
    delta.financial_exposure_usd,
    delta.external_communications,
    delta.records_modified,
    delta.domains,
    agentName,
  ]);
}

/**
 * The chain's recorded actions in sequence order, whatever their decision, as CEL's
 * `chain.actions` sees them (policy ChainState.actions_so_far). Read only when a custom rule's
 * expression reads `chain.actions` (policy configUsesChainActions).
 */
export async function chainActionSummaries(q: Queryable, chainId: string): Promise<ChainActionSummary[]> {
  const { rows } = await q.query<ChainActionSummary>(
    "SELECT action_name AS name, action_type AS type, agent_name FROM chain_events WHERE chain_id = $1 ORDER BY sequence",
    [chainId],
  );
  return rows;
}

/** Events of a chain in order, as the API returns them. */
export async function chainEvents(q: Queryable, chainId: string) {
  const { rows } = await q.query(
    `SELECT id, sequence, agent_name, parent_agent_name, action_type, action_name, payload, category, decision,
       exception_id, approval_id, recorded_at, outcome, principal FROM chain_events WHERE chain_id = $1
     ORDER BY sequence`,
    [chainId],
  );
  return rows.map((r) => ({
    event_id: r.id as string,
    sequence: r.sequence as number,
    agent_name: r.agent_name as string,
    parent_agent_name: r.parent_agent_name as string | null,
    action_type: r.action_type as string,
    action_name: r.action_name as string,
    payload: r.payload,
    category: r.category as string,
    decision: r.decision as PolicyDecision,
    exception_id: r.exception_id as string | null,
    approval_id: r.approval_id as string | null,
    recorded_at: new Date(r.recorded_at).toISOString(),
    outcome: r.outcome,
    principal: (r.principal ?? null) as WorkloadIdentity | null,
  })) satisfies WireOf<typeof ChainEventSchema>[];
}

/** Seals a chain: completed or failed (with its failure), when, and the receipt that seals it. */
export async function sealChain(
  q: Queryable,
  chainId: string,
  seal: {
    status: "completed" | "failed";
    failure: { mode: string; message: string } | null;
    completedAt: Date;
    receiptId: string;
  },
): Promise<void> {
  await q.query(
    "UPDATE chains SET status = $2, failure = $3, completed_at = $4, receipt_id = $5 WHERE id = $1",
    [chainId, seal.status, seal.failure, seal.completedAt, seal.receiptId],
  );
}

/** How many events the chains hold together. */
export async function countEvents(q: Queryable, chainIds: string[]): Promise<number> {
  const { rows } = await q.query(
    "SELECT count(*)::int AS n FROM chain_events WHERE chain_id = ANY($1::uuid[])",
    [chainIds],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Binds outcomes to their events in one statement: an event gets its outcome only if it has
 * none, it was allowed, and its chain is an open chain of `orgId` (held FOR KEY SHARE for the
 * statement only). Each event id at most once in `items`. Returns the ids of the bound events.
 */
export async function bindOutcomes(
  q: Queryable,
  orgId: string,
  items: readonly { chain_id: string; event_id: string; outcome: EventOutcome }[],
): Promise<Set<string>> {
  const { rows } = await q.query<{ id: string }>(
    `UPDATE chain_events e SET outcome = v.outcome
     FROM jsonb_to_recordset($2::jsonb) AS v(chain_id uuid, event_id uuid, outcome jsonb)
     WHERE e.id = v.event_id AND e.chain_id = v.chain_id AND e.outcome IS NULL
       AND e.decision->>'policy_decision' IN ('allow', 'allow_with_flag')
       AND EXISTS (SELECT 1 FROM chains c WHERE c.id = v.chain_id AND c.org_id = $1 AND c.status NOT IN ('completed', 'failed') FOR KEY SHARE)
     RETURNING e.id`,
    [orgId, JSON.stringify(items)],
  );
  return new Set(rows.map((r) => r.id));
}

/** An event's decision and outcome (why an outcome was refused), or undefined when the chain has no such event. */
export async function eventOutcomeState(
  q: Queryable,
  chainId: string,
  eventId: string,
): Promise<{ decision: { policy_decision: string }; outcome: EventOutcome | null } | undefined> {
  const { rows } = await q.query<{ decision: { policy_decision: string }; outcome: EventOutcome | null }>(
    "SELECT decision, outcome FROM chain_events WHERE id = $1 AND chain_id = $2",
    [eventId, chainId],
  );
  return rows[0];
}
