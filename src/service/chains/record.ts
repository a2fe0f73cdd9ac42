/**
 * Chains and recorded actions (spec: "Chain", "Recorded action", "States and transitions").
 * Recording evaluates the action with the pure policy engine and writes the event, the chain's
 * counters and, on require_approval, the approval with its durable timers, in one transaction.
 */
import { randomUUID } from "node:crypto";
import { z } from "zod";
import { MAX_BODY_BYTES } from "../../contract/v1/limits.js";
import { evaluate } from "../../policy/engine.js";
import { mergePolicyConfig } from "../../policy/merge.js";
import { redactText, sanitizePayload } from "../../policy/sanitize.js";
import {
  type Action,
  ActionSchema,
  type ActiveException,
  PolicyConfigPatchSchema,
  type PolicyDecision,
} from "../../policy/schema.js";
import type { Clock } from "../clock.js";
import type { Database, PreparedStatement, Queryable } from "../db/pool.js";
import { conflict, notFound, unauthorized } from "../errors.js";
import { enqueueApprovalRequested, scheduleApprovalTimers } from "../approvals/decide.js";
import type { ChainState, ChainStateCache } from "./snapshot-cache.js";
import { type Organization, type OrgConfigCache, orgById, orgState } from "../orgs/orgs.js";
import type { GuardedWrite, RecordBatcher } from "./record-batch.js";

/** Chain status values (the spec names pending_approval; the rest are ours, see README). */
export const ChainStatus = {
  open: "open",
  pending_approval: "pending_approval",
  paused: "paused",
  completed: "completed",
  failed: "failed",
} as const;
export type ChainStatus = (typeof ChainStatus)[keyof typeof ChainStatus];

/** Body of POST /v1/chains. */
export const CreateChainSchema = z
  .object({
    name: z.string().min(1).max(200),
    metadata: z.record(z.string(), z.unknown()).default({}),
    policy_config: PolicyConfigPatchSchema.default({}),
    environment: z.string().min(1).max(63).optional(),
  })
  .strict();
export type CreateChain = z.infer<typeof CreateChainSchema>;

/** Body of POST /v1/chains/{chain_id}/actions (spec: "Recorded action"). */
export const RecordActionSchema = ActionSchema;

/** Server-side sanitization limits (spec: "Limits", payload sanitization defaults). */
export const MAX_PAYLOAD_STRING_LENGTH = 1000;

/** A chain row. */
export interface ChainRow {
  id: string;
  org_id: string;
  name: string;
  metadata: Record<string, unknown>;
  policy_config: Record<string, unknown>;
  environment: string;
  status: ChainStatus;
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
}

/** The chain as the API returns it. */
export function chainView(c: ChainRow) {
  return {
    chain_id: c.id,
    name: c.name,
    metadata: c.metadata,
    policy_config: c.policy_config,
    environment: c.environment,
    status: c.status,
    failure: c.failure,
    started_at: new Date(c.started_at).toISOString(),
    completed_at: c.completed_at ? new Date(c.completed_at).toISOString() : null,
    total_actions: c.event_count,
    cumulative_metrics: cumulativeMetrics(c),
    receipt_id: c.receipt_id,
  };
}

/** The receipt's cumulative_metrics of a chain (USD amounts, counts, domain names). */
export const cumulativeMetrics = (c: ChainRow) => ({
  financial_exposure_usd: round6(c.financial_exposure_usd),
  external_communications_count: c.external_communications_count,
  records_modified_count: c.records_modified_count,
  external_domains_contacted: [...c.domains_contacted].sort(),
  estimated_cost_usd: round6(c.estimated_cost_usd),
});

const round6 = (n: number) => Math.round(n * 1e6) / 1e6;

/** Creates a chain for an organization (spec: entering the chain context). */
export async function createChain(
  db: Database,
  opts: { orgId: string; body: CreateChain; createdBy: string; clock: Clock },
): Promise<ReturnType<typeof chainView>> {
  const org = await orgById(db, opts.orgId);
  const id = randomUUID();
  const { rows } = await db.query<ChainRow>(
    `INSERT INTO chains (id, org_id, name, metadata, policy_config, environment, status, started_at, created_by)
     VALUES ($1,$2,$3,$4,$5,$6,'open',$7,$8) RETURNING *`,
    [
      id,
      org.id,
      // Names and metadata are shown in receipts and the dashboard: secrets are redacted here
      // with the payload's rules (strings are not truncated, nesting is cut at 20 levels).
      redactText(opts.body.name),
      sanitizePayload(opts.body.metadata, { maxStringLength: MAX_BODY_BYTES }).payload,
      opts.body.policy_config,
      opts.body.environment ?? org.environment,
      new Date(opts.clock.nowMs()),
      opts.createdBy,
    ],
  );
  return chainView(rows[0]!);
}

/** Loads a chain of an organization; 404 when it does not exist or belongs to another. */
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

/** The recording response: the PolicyDecision plus where it was recorded. */
export type RecordResult = PolicyDecision & {
  event_id: string;
  chain_id: string;
  sequence: number;
  category: string;
  approval_id: string | null;
  approval_expires_at: string | null;
  exception_id: string | null;
  chain_status: ChainStatus;
};

/** The evaluation of one action against a chain and its organization (pure engine, cached config). */
async function evaluateAction(
  q: Queryable,
  state: ChainState,
  action: Action,
  configs: OrgConfigCache,
  nowMs: number,
) {
  const { row: chain, org } = state;
  const compiled = await configs.get(q, org);
  if (state.merged?.version !== compiled.version) {
    state.merged = {
      version: compiled.version,
      config: mergePolicyConfig(compiled.config, PolicyConfigPatchSchema.parse(chain.policy_config as never)),
    };
  }
  const config = state.merged.config;
  const input = {
    config,
    org: orgState(org),
    chain: {
      started_at_ms: new Date(chain.started_at).getTime(),
      event_count: chain.event_count,
      total_tokens: chain.total_tokens,
      financial_exposure_usd: chain.financial_exposure_usd,
      agents_with_external_communication: chain.external_comm_agents,
    },
    action,
    exceptions: [] as ActiveException[],
    nowMs,
  };
  let ev = evaluate(input);
  if (
    ev.decision.policy_decision === "require_approval" ||
    ev.decision.shadow_decision === "require_approval"
  ) {
    input.exceptions = await activeExceptions(q, org.id, action, nowMs);
    if (input.exceptions.length) ev = evaluate(input);
  }
  return { ev, config };
}

const EVENT_COLUMNS = `id, chain_id, org_id, sequence, agent_name, parent_agent_name, action_type, action_name,
  payload, category, facts, decision, triggers, exception_id, approval_id, recorded_at`;

/** Values of one chain_events row, in EVENT_COLUMNS order (16 parameters). */
function eventValues(
  ids: { eventId: string; chainId: string; orgId: string; sequence: number; approvalId: string | null },
  action: Action,
  ev: ReturnType<typeof evaluate>,
  nowMs: number,
): unknown[] {
  return [
    ids.eventId,
    ids.chainId,
    ids.orgId,
    ids.sequence,
    action.agent_name,
    action.parent_agent_name ?? null,
    action.action_type,
    action.action_name,
    action.payload,
    ev.category,
    storedFacts(ev),
    ev.decision,
    JSON.stringify(ev.triggers),
    ev.exception_id,
    ids.approvalId,
    new Date(nowMs),
  ];
}

/** SET clause updating the chain's counters after one action; parameters start at $first. */
function chainUpdate(
  first: number,
  ev: ReturnType<typeof evaluate>,
  agentName: string,
  sequence: number,
  status: ChainStatus,
) {
  const allowed =
    ev.decision.policy_decision === "allow" || ev.decision.policy_decision === "allow_with_flag";
  const d = ev.metrics_delta;
  const p = (i: number) => `$${first + i}`;
  return {
    sql: `event_count = ${p(0)}, total_tokens = total_tokens + ${p(1)}, estimated_cost_usd = estimated_cost_usd + ${p(2)},
      status = ${p(3)}${allowed ? `, ${metricsUpdateSql(first + 4)}` : ""}`,
    values: [
      sequence,
      d.tokens,
      d.estimated_cost_usd,
      status,
      ...(allowed ? metricsUpdateValues(d, agentName) : []),
    ],
  };
}

function result(
  ev: ReturnType<typeof evaluate>,
  ids: { eventId: string; chainId: string; sequence: number; approvalId: string | null },
  expiresAt: string | null,
  status: ChainStatus,
): RecordResult {
  // Fields first, spread last: on Node 20 each property written after a spread costs ~1 µs
  // (a new hidden class every time; 11 µs for this object), and Object.assign onto {} leaves a
  // dictionary-mode object that serializes slowly. The keys do not overlap.
  return {
    event_id: ids.eventId,
    chain_id: ids.chainId,
    sequence: ids.sequence,
    category: ev.category,
    approval_id: ids.approvalId,
    approval_expires_at: expiresAt,
    exception_id: ev.exception_id,
    chain_status: status,
    ...ev.decision,
  };
}

/**
 * What chain_events.facts keeps: the engine's facts that are set (not null, false, 0, "" or
 * empty), and the metrics delta when it is not all zero — a plain action stores `{}`. An absent
 * key reads as its unset value; `category` is a column of its own, and the exception scope is
 * derived from the event's columns and destination_domain (see approvals.ts). The full facts
 * were ~800 of the ~1.6 KB each action sent to PostgreSQL (docs/adr/0006).
 */
function storedFacts(ev: ReturnType<typeof evaluate>): Record<string, unknown> {
  const stored: Record<string, unknown> = {};
  const facts = ev.facts as unknown as Record<string, unknown>;
  for (const key in facts) {
    if (key !== "category" && isSet(facts[key])) stored[key] = facts[key];
  }
  if (Object.values(ev.metrics_delta).some(isSet)) stored.metrics_delta = ev.metrics_delta;
  return stored;
}

const isSet = (v: unknown): boolean =>
  v !== null && v !== false && v !== 0 && v !== "" && !(Array.isArray(v) && v.length === 0);

/** The action with its payload sanitized and truncated server-side (spec defaults). */
const sanitizedAction = (action: Action): Action => ({
  ...action,
  payload: sanitizePayload(action.payload ?? {}, { maxStringLength: MAX_PAYLOAD_STRING_LENGTH }).payload,
});

/** What recordAction needs besides the action. */
export interface RecordContext {
  orgId: string;
  chainId: string;
  clock: Clock;
  configs: OrgConfigCache;
  /** Chain states this process remembers between actions (docs/adr/0006). */
  chains: ChainStateCache;
  /** The API key recording, re-checked inside the guarded write; null for user sessions. */
  keyId: string | null;
  /** Group commit of guarded writes. */
  writer: RecordBatcher;
}

/**
 * Records one action into an open chain and returns the backend's decision.
 *
 * The hot path is one round trip: with the chain's state remembered from this process's last
 * write (ChainStateCache), the policy engine decides in memory and one statement writes the
 * event and advances the chain — guarded by the chain row's version, the organization's
 * config_version, kill switch and pause flags, and the API key not being revoked. When a guard
 * fails (someone else wrote) the state is read again and the write retried; a require_approval
 * outcome takes the locked transaction, which also writes the approval, its durable timers and
 * the notifications (docs/adr/0005, 0006).
 * @throws ApiError 401 TG_ERR_UNAUTHENTICATED (the API key was revoked); 404 unknown chain;
 *   409 TG_ERR_CHAIN_COMPLETED (sealed chain), TG_ERR_APPROVAL_PENDING (an earlier action still
 *   awaits approval), TG_ERR_CHAIN_PAUSED (auto-paused chain).
 */
export async function recordAction(
  db: Database,
  opts: RecordContext & { action: Action },
): Promise<RecordResult> {
  const nowMs = opts.clock.nowMs();
  const action = sanitizedAction(opts.action);
  for (let attempt = 0; attempt < 3; attempt++) {
    const state =
      (attempt === 0 && opts.chains.get(opts.chainId, opts.orgId)) || (await readChainState(db, opts));
    assertAcceptsActions(state.row);
    const { ev } = await evaluateAction(db, state, action, opts.configs, nowMs);
    if (ev.decision.policy_decision === "require_approval") break;
    const done = await writeGuarded(opts.writer, state, opts.keyId, action, ev, nowMs);
    if (done) {
      opts.chains.set(done.state);
      return done.result;
    }
    opts.chains.delete(opts.chainId);
  }
  opts.chains.delete(opts.chainId);
  return recordLocked(db, opts, action, nowMs);
}

/** The answer of an evaluation that records nothing (POST .../actions/evaluate). */
export type PreviewResult = PolicyDecision & { chain_id: string; category: string; recorded: false };

/**
 * Decides an action against the chain's current state without recording it: no event, no
 * counters, no approval (a dry run for policy authors and CI; the decision an agent would get
 * if it recorded the action now). One round trip: the chain, its organization and the API key
 * in one read; the engine decides in memory.
 * @throws ApiError as recordAction does for a missing, completed, paused or pending chain.
 */
export async function previewAction(
  db: Database,
  opts: Pick<RecordContext, "orgId" | "chainId" | "clock" | "configs" | "keyId"> & { action: Action },
): Promise<PreviewResult> {
  const nowMs = opts.clock.nowMs();
  const state = await readChainState(db, opts);
  assertAcceptsActions(state.row);
  const { ev } = await evaluateAction(db, state, sanitizedAction(opts.action), opts.configs, nowMs);
  return { chain_id: state.row.id, category: ev.category, recorded: false, ...ev.decision };
}

const READ_CHAIN_STATE: PreparedStatement = {
  name: "tg_read_chain_state",
  text: `SELECT c.*, c.xmin::text AS row_xmin, to_jsonb(o.*) AS org,
       $3::uuid IS NULL OR EXISTS (SELECT 1 FROM api_keys k WHERE k.id = $3 AND k.revoked_at IS NULL) AS key_ok
     FROM chains c JOIN organizations o ON o.id = c.org_id WHERE c.id = $1 AND c.org_id = $2`,
};

/**
 * Reads a chain with its organization and row version in one query.
 * @throws ApiError 404 unknown chain; 401 when `keyId` names a revoked API key.
 */
async function readChainState(
  q: Queryable,
  opts: { orgId: string; chainId: string; keyId: string | null },
): Promise<ChainState> {
  const { rows } = await q.query(READ_CHAIN_STATE, [opts.chainId, opts.orgId, opts.keyId]);
  const row = rows[0];
  if (!row) throw notFound("Chain");
  if (!row.key_ok) throw unauthorized("The API key or session is invalid or revoked");
  const { row_xmin, org, key_ok: _, ...chain } = row;
  return { row: chain as ChainRow, xmin: row_xmin as string, org: org as Organization };
}

/**
 * Advances the chain from the state that was read and inserts the event in one guarded
 * statement (group-committed with concurrent recordings, see record-batch.ts), only if the
 * chain, its organization and the API key are still as they were. Returns the new state and
 * the result, or null when a guard failed and nothing was written.
 */
async function writeGuarded(
  writer: RecordBatcher,
  state: ChainState,
  keyId: string | null,
  action: Action,
  ev: ReturnType<typeof evaluate>,
  nowMs: number,
): Promise<{ state: ChainState; result: RecordResult } | null> {
  const { row: chain, org } = state;
  const sequence = chain.event_count + 1;
  const status: ChainStatus = ev.decision.auto_paused ? "paused" : chain.status;
  const ids = { eventId: randomUUID(), chainId: chain.id, orgId: org.id, sequence, approvalId: null };
  const allowed =
    ev.decision.policy_decision === "allow" || ev.decision.policy_decision === "allow_with_flag";
  const d = ev.metrics_delta;
  const write: GuardedWrite = {
    chainId: chain.id,
    xmin: state.xmin,
    orgId: org.id,
    configVersion: org.config_version,
    killSwitchActive: org.kill_switch_active,
    paused: org.paused,
    keyId,
    sequence,
    status,
    tokens: d.tokens,
    costUsd: d.estimated_cost_usd,
    financialExposureUsd: allowed ? d.financial_exposure_usd : 0,
    externalCommunications: allowed ? d.external_communications : 0,
    recordsModified: allowed ? d.records_modified : 0,
    domains: allowed ? d.domains : [],
    agentName: action.agent_name,
    event: {
      id: ids.eventId,
      org_id: org.id,
      parent_agent_name: action.parent_agent_name ?? null,
      action_type: action.action_type,
      action_name: action.action_name,
      payload: action.payload,
      category: ev.category,
      facts: storedFacts(ev),
      decision: ev.decision,
      triggers: ev.triggers,
      exception_id: ev.exception_id,
      recorded_at: new Date(nowMs).toISOString(),
    },
  };
  const xmin = await writer.write(write);
  if (xmin === null) return null;
  return {
    state: { row: advancedChain(chain, write), xmin, org, merged: state.merged },
    result: result(ev, ids, null, status),
  };
}

/**
 * The chain row after a guarded write, computed as the statement computes it (record-batch.ts):
 * the write's guards made sure `chain` was the row it updated, so nothing is read back. Arrays
 * are sets (their order is not kept, as in the database); amounts add as float8 adds.
 */
function advancedChain(chain: ChainRow, w: GuardedWrite): ChainRow {
  // A clone written in place keeps its hidden class (see result).
  const next = { ...chain };
  next.event_count = w.sequence;
  next.status = w.status as ChainStatus;
  next.total_tokens = chain.total_tokens + w.tokens;
  next.estimated_cost_usd = chain.estimated_cost_usd + w.costUsd;
  next.financial_exposure_usd = chain.financial_exposure_usd + w.financialExposureUsd;
  next.external_communications_count = chain.external_communications_count + w.externalCommunications;
  next.records_modified_count = chain.records_modified_count + w.recordsModified;
  if (w.domains.length) next.domains_contacted = [...new Set([...chain.domains_contacted, ...w.domains])];
  if (w.externalCommunications > 0 && !chain.external_comm_agents.includes(w.agentName)) {
    next.external_comm_agents = [...chain.external_comm_agents, w.agentName];
  }
  return next;
}

/** The locked path: one transaction holding the chain row; writes approvals when required. */
async function recordLocked(
  db: Database,
  opts: { orgId: string; chainId: string; configs: OrgConfigCache; keyId: string | null },
  action: Action,
  nowMs: number,
): Promise<RecordResult> {
  return db.tx(async (q) => {
    const chain = await getChain(q, opts.orgId, opts.chainId, true);
    assertAcceptsActions(chain);
    if (opts.keyId) await assertKeyActive(q, opts.keyId);
    const org = await orgById(q, opts.orgId);
    const { ev, config } = await evaluateAction(
      q,
      { row: chain, xmin: "", org },
      action,
      opts.configs,
      nowMs,
    );
    const needsApproval = ev.decision.policy_decision === "require_approval";
    const sequence = chain.event_count + 1;
    const ids = {
      eventId: randomUUID(),
      chainId: chain.id,
      orgId: org.id,
      sequence,
      approvalId: needsApproval ? randomUUID() : null,
    };
    const values = eventValues(ids, action, ev, nowMs);
    await q.query(
      `INSERT INTO chain_events (${EVENT_COLUMNS}) VALUES (${values.map((_, i) => `$${i + 1}`).join(", ")})`,
      values,
    );
    const status: ChainStatus = ev.decision.auto_paused
      ? "paused"
      : needsApproval
        ? "pending_approval"
        : chain.status;
    const update = chainUpdate(2, ev, action.agent_name, sequence, status);
    await q.query(`UPDATE chains SET ${update.sql} WHERE id = $1`, [chain.id, ...update.values]);
    let expiresAt: string | null = null;
    if (ids.approvalId) {
      const timeoutMs = org.approval_timeout_hours * 3600_000;
      expiresAt = new Date(nowMs + timeoutMs).toISOString();
      await q.query(
        `INSERT INTO approvals (id, org_id, chain_id, event_id, status, requested_at, expires_at, escalate_at, requested_decision)
         VALUES ($1,$2,$3,$4,'pending',$5,$6,$7,$8)`,
        [
          ids.approvalId,
          org.id,
          chain.id,
          ids.eventId,
          new Date(nowMs),
          new Date(nowMs + timeoutMs),
          new Date(nowMs + timeoutMs / 2),
          ev.decision,
        ],
      );
      await scheduleApprovalTimers(q, { approvalId: ids.approvalId, nowMs, timeoutMs });
      await enqueueApprovalRequested(q, {
        orgId: org.id,
        approvalId: ids.approvalId,
        nowMs,
        extraRecipients: ev.category === "financial" ? config.financial_notify : [],
      });
    }
    return result(ev, ids, expiresAt, status);
  });
}

/** SQL fragment that adds an allowed action's metrics to the chain, parameters $first..$first+4. */
export const metricsUpdateSql = (first: number): string => {
  const [fin, ext, rec, dom, agent] = [0, 1, 2, 3, 4].map((i) => `$${first + i}`);
  return `financial_exposure_usd = financial_exposure_usd + ${fin},
  external_communications_count = external_communications_count + ${ext},
  records_modified_count = records_modified_count + ${rec},
  domains_contacted = ARRAY(SELECT DISTINCT unnest(domains_contacted || ${dom}::text[])),
  external_comm_agents = CASE WHEN ${ext} > 0 AND NOT (${agent} = ANY(external_comm_agents))
    THEN array_append(external_comm_agents, ${agent}::text) ELSE external_comm_agents END`;
};

/** Values for metricsUpdateSql, in order. */
export const metricsUpdateValues = (
  d: {
    financial_exposure_usd: number;
    external_communications: number;
    records_modified: number;
    domains: string[];
  },
  agentName: string,
) => [d.financial_exposure_usd, d.external_communications, d.records_modified, d.domains, agentName];

function assertAcceptsActions(chain: ChainRow): void {
  if (chain.status === "completed" || chain.status === "failed") {
    throw conflict("TG_ERR_CHAIN_COMPLETED", "The chain is completed and accepts no further actions", {
      chain_id: chain.id,
      status: chain.status,
    });
  }
  if (chain.status === "pending_approval") {
    throw conflict("TG_ERR_APPROVAL_PENDING", "An earlier action of this chain is waiting for approval", {
      chain_id: chain.id,
    });
  }
  if (chain.status === "paused") {
    throw conflict("TG_ERR_CHAIN_PAUSED", "The chain was auto-paused by a runaway limit", {
      chain_id: chain.id,
    });
  }
}

/** @throws ApiError 401 when the API key was revoked. */
async function assertKeyActive(q: Queryable, keyId: string): Promise<void> {
  const { rowCount } = await q.query("SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL", [keyId]);
  if (!rowCount) throw unauthorized("The API key or session is invalid or revoked");
}

/** Active exceptions matching the action's agent and action type (domain is matched by the engine). */
async function activeExceptions(
  q: Queryable,
  orgId: string,
  action: Action,
  nowMs: number,
): Promise<ActiveException[]> {
  const { rows } = await q.query(
    `SELECT id, agent_name, action_type, destination_domain, expires_at FROM exceptions
     WHERE org_id = $1 AND agent_name = $2 AND action_type = $3 AND expires_at > $4 AND revoked_at IS NULL`,
    [orgId, action.agent_name, action.action_type, new Date(nowMs)],
  );
  return rows.map((r) => ({
    exception_id: r.id,
    agent_name: r.agent_name,
    action_type: r.action_type,
    destination_domain: r.destination_domain,
    expires_at_ms: new Date(r.expires_at).getTime(),
  }));
}

/** Events of a chain in order, as the API returns them. */
export async function chainEvents(q: Queryable, chainId: string) {
  const { rows } = await q.query(
    `SELECT id, sequence, agent_name, parent_agent_name, action_type, action_name, payload, category, decision,
       exception_id, approval_id, recorded_at, outcome FROM chain_events WHERE chain_id = $1 ORDER BY sequence`,
    [chainId],
  );
  return rows.map((r) => ({
    event_id: r.id,
    sequence: r.sequence,
    agent_name: r.agent_name,
    parent_agent_name: r.parent_agent_name,
    action_type: r.action_type,
    action_name: r.action_name,
    payload: r.payload,
    category: r.category,
    decision: r.decision as PolicyDecision,
    exception_id: r.exception_id,
    approval_id: r.approval_id,
    recorded_at: new Date(r.recorded_at).toISOString(),
    outcome: r.outcome,
  }));
}
