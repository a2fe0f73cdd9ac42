/**
 * Creating chains and recording actions (spec: "Chain", "Recorded action", "States and
 * transitions"). Recording evaluates the action with the pure policy engine and writes, through
 * the chain store, the event and the chain's counters — and on require_approval the approval
 * with its durable timers and mail — in one statement or one transaction.
 */
import { randomUUID } from "node:crypto";
import type { CreateChain, RecordActionResponseSchema, WireOf } from "../../contract/v1/chains.js";
import { ApiErrorCode } from "../../contract/v1/errors.js";
import { MAX_BODY_BYTES } from "../../contract/v1/limits.js";
import type { ChainLifecycle } from "../../contract/v1/wire.js";
import { evaluate } from "../../policy/engine.js";
import { redactText, sanitizePayload } from "../../policy/sanitize.js";
import type { Action, ActiveException, PolicyDecision, WorkloadIdentity } from "../../policy/schema.js";
import { requestApproval } from "../approvals/request.js";
import type { Clock } from "../clock.js";
import type { Database, Queryable } from "../db/pool.js";
import { conflict } from "../errors.js";
import { activeExceptions } from "../exceptions/store.js";
import { chainConfigOf, type OrgConfigCache, orgById, orgState } from "../orgs/orgs.js";
import { advanceChain, advanceOf } from "./counters.js";
import type { RecordBatcher } from "./record-batch.js";
import type { CachedChain, ChainSnapshotCache } from "./snapshot-cache.js";
import {
  type ChainRow,
  chainActionSummaries,
  type GuardedWrite,
  insertChain,
  readChainSnapshot,
  writeEvents,
} from "./store.js";
import { type ChainBody, chainView } from "./views.js";

/** Server-side sanitization limit of payload strings (spec: "Limits", payload sanitization defaults). */
export const MAX_PAYLOAD_STRING_LENGTH = 1000;

/**
 * Creates a chain for an organization (spec: entering the chain context). Names and metadata
 * are shown in receipts and the dashboard: secrets are redacted with the payload's rules
 * (strings are not truncated, nesting is cut at 20 levels).
 * @throws ApiError 404 when the organization does not exist.
 */
export async function createChain(
  db: Database,
  opts: {
    orgId: string;
    body: CreateChain;
    createdBy: string;
    principal: WorkloadIdentity | null;
    clock: Clock;
  },
): Promise<ChainBody> {
  const org = await orgById(db, opts.orgId);
  const row = await insertChain(db, {
    id: randomUUID(),
    orgId: org.id,
    name: redactText(opts.body.name),
    metadata: sanitizePayload(opts.body.metadata, { maxStringLength: MAX_BODY_BYTES }).payload as Record<
      string,
      unknown
    >,
    policyConfig: opts.body.policy_config,
    environment: opts.body.environment ?? org.environment,
    startedAt: new Date(opts.clock.nowMs()),
    createdBy: opts.createdBy,
    principal: opts.principal,
  });
  return chainView(row);
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
  chain_status: ChainLifecycle;
};

type Evaluation = ReturnType<typeof evaluate>;

/** The evaluation of one action against a chain and its organization (pure engine, cached config). */
async function evaluateAction(
  q: Queryable,
  state: CachedChain,
  action: Action,
  configs: OrgConfigCache,
  nowMs: number,
  identity: WorkloadIdentity | null,
) {
  const { row: chain, org } = state;
  const compiled = await configs.get(q, org);
  if (state.merged?.version !== compiled.version) {
    state.merged = { version: compiled.version, ...chainConfigOf(compiled, chain.policy_config) };
  }
  const { config, usesChainActions } = state.merged;
  const input = {
    config,
    org: orgState(org),
    chain: {
      started_at_ms: new Date(chain.started_at).getTime(),
      event_count: chain.event_count,
      total_tokens: chain.total_tokens,
      financial_exposure_usd: chain.financial_exposure_usd,
      agents_with_external_communication: chain.external_comm_agents,
      // One more read, only for policies whose expressions look at the chain's earlier actions.
      ...(usesChainActions && { actions_so_far: await chainActionSummaries(q, chain.id) }),
    },
    action,
    exceptions: [] as ActiveException[],
    nowMs,
    identity,
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

function result(ev: Evaluation, write: GuardedWrite, expiresAt: string | null): RecordResult {
  // Fields first, spread last: on Node 20 each property written after a spread costs ~1 µs
  // (a new hidden class every time; 11 µs for this object), and Object.assign onto {} leaves a
  // dictionary-mode object that serializes slowly. The keys do not overlap.
  return {
    event_id: write.event.id,
    chain_id: write.chainId,
    sequence: write.advance.sequence,
    category: ev.category,
    approval_id: write.event.approval_id,
    approval_expires_at: expiresAt,
    exception_id: ev.exception_id,
    chain_status: write.advance.status,
    ...ev.decision,
  } satisfies WireOf<typeof RecordActionResponseSchema>;
}

/**
 * What chain_events.facts keeps: the engine's facts that are set (not null, false, 0, "" or
 * empty), and the metrics delta when it is not all zero — a plain action stores `{}`. An absent
 * key reads as its unset value; `category` is a column of its own, and the exception scope is
 * derived from the event's columns and destination_domain (see approvals/decide.ts). The full
 * facts were ~800 of the ~1.6 KB each action sent to PostgreSQL (docs/adr/0006).
 */
function storedFacts(ev: Evaluation): Record<string, unknown> {
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

/**
 * The guarded write of one evaluated action against the chain state it was decided on: the
 * chain advances (allowed actions count their metrics; a require_approval action leaves the
 * chain pending_approval; an auto-pause pauses it) and the event is inserted.
 */
function guardedWrite(
  state: CachedChain,
  keyId: string | null,
  action: Action,
  ev: Evaluation,
  nowMs: number,
  approvalId: string | null,
  identity: WorkloadIdentity | null,
): GuardedWrite {
  const { row: chain, org } = state;
  const outcome = ev.decision.policy_decision;
  const status: ChainLifecycle = ev.decision.auto_paused
    ? "paused"
    : outcome === "require_approval"
      ? "pending_approval"
      : chain.status;
  return {
    chainId: chain.id,
    xmin: state.xmin,
    orgId: org.id,
    configVersion: org.config_version,
    killSwitchActive: org.kill_switch_active,
    paused: org.paused,
    keyId,
    advance: advanceOf(ev.metrics_delta, {
      sequence: chain.event_count + 1,
      status,
      allowed: outcome === "allow" || outcome === "allow_with_flag",
      agentName: action.agent_name,
    }),
    event: {
      id: randomUUID(),
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
      approval_id: approvalId,
      recorded_at: new Date(nowMs).toISOString(),
      principal: identity,
      org_environment: org.environment,
    },
  };
}

/** What recordAction needs besides the action. */
export interface RecordContext {
  orgId: string;
  chainId: string;
  clock: Clock;
  configs: OrgConfigCache;
  /** Chain states this process remembers between actions (docs/adr/0006). */
  chains: ChainSnapshotCache;
  /** The API key recording, re-checked inside the guarded write; null for user sessions. */
  keyId: string | null;
  /** The caller's verified workload identity (recorded on the event, given to policy); null without one. */
  identity: WorkloadIdentity | null;
  /** Group commit of guarded writes. */
  writer: RecordBatcher;
}

/** Attempts of a guarded write before recording reports a conflict (another writer each time). */
const MAX_ATTEMPTS = 3;

/**
 * Records one action into an open chain and returns the backend's decision.
 *
 * The hot path is one round trip: with the chain's state remembered from this process's last
 * write (ChainSnapshotCache), the policy engine decides in memory and one statement writes the
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
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const state: CachedChain =
      (attempt === 0 && opts.chains.get(opts.chainId, opts.orgId)) || (await readChainSnapshot(db, opts));
    assertAcceptsActions(state.row);
    const { ev } = await evaluateAction(db, state, action, opts.configs, nowMs, opts.identity);
    if (ev.decision.policy_decision === "require_approval") break;
    const write = guardedWrite(state, opts.keyId, action, ev, nowMs, null, opts.identity);
    const xmin = await opts.writer.write(write);
    if (xmin !== null) {
      // The guards made sure the row was the one remembered: the new row is computed, not read.
      opts.chains.set({
        row: advanceChain(state.row, write.advance),
        xmin,
        org: state.org,
        merged: state.merged,
      });
      return result(ev, write, null);
    }
    opts.chains.delete(opts.chainId);
  }
  opts.chains.delete(opts.chainId);
  return recordLocked(db, opts, action, nowMs);
}

/**
 * The locked path: one transaction holding the chain row, writing through the same guarded
 * statement, plus the approval when required. The row lock keeps the chain as read; a guard can
 * still fail when the organization changed meanwhile, and the transaction is then retried.
 * @throws ApiError as recordAction documents; 409 TG_ERR_CONFLICT when the guard failed
 *   MAX_ATTEMPTS times (nothing written).
 */
async function recordLocked(
  db: Database,
  opts: {
    orgId: string;
    chainId: string;
    configs: OrgConfigCache;
    keyId: string | null;
    identity: WorkloadIdentity | null;
  },
  action: Action,
  nowMs: number,
): Promise<RecordResult> {
  for (let attempt = 1; ; attempt++) {
    const recorded = await db.tx(async (q) => {
      const state: CachedChain = await readChainSnapshot(q, { ...opts, lock: true });
      assertAcceptsActions(state.row);
      const { ev, config } = await evaluateAction(q, state, action, opts.configs, nowMs, opts.identity);
      const needsApproval = ev.decision.policy_decision === "require_approval";
      const write = guardedWrite(
        state,
        opts.keyId,
        action,
        ev,
        nowMs,
        needsApproval ? randomUUID() : null,
        opts.identity,
      );
      const [xmin] = await writeEvents(q, [write]);
      if (xmin === null) return null;
      const expiresAt = write.event.approval_id
        ? await requestApproval(q, {
            approvalId: write.event.approval_id,
            orgId: state.org.id,
            chainId: state.row.id,
            eventId: write.event.id,
            decision: ev.decision,
            nowMs,
            timeoutHours: state.org.approval_timeout_hours,
            extraRecipients: ev.category === "financial" ? config.financial_notify : [],
          })
        : null;
      return result(ev, write, expiresAt);
    });
    if (recorded) return recorded;
    if (attempt >= MAX_ATTEMPTS) {
      throw conflict(ApiErrorCode.CONFLICT, "The organization changed while the action was recorded; retry", {
        chain_id: opts.chainId,
      });
    }
  }
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
  opts: Pick<RecordContext, "orgId" | "chainId" | "clock" | "configs" | "keyId" | "identity"> & {
    action: Action;
  },
): Promise<PreviewResult> {
  const nowMs = opts.clock.nowMs();
  const state = await readChainSnapshot(db, opts);
  assertAcceptsActions(state.row);
  const { ev } = await evaluateAction(
    db,
    state,
    sanitizedAction(opts.action),
    opts.configs,
    nowMs,
    opts.identity,
  );
  return { chain_id: state.row.id, category: ev.category, recorded: false, ...ev.decision };
}

/** @throws ApiError 409 when the chain is completed, failed, waiting for an approval or paused. */
function assertAcceptsActions(chain: Pick<ChainRow, "id" | "status">): void {
  if (chain.status === "completed" || chain.status === "failed") {
    throw conflict(ApiErrorCode.CHAIN_COMPLETED, "The chain is completed and accepts no further actions", {
      chain_id: chain.id,
      status: chain.status,
    });
  }
  if (chain.status === "pending_approval") {
    throw conflict(ApiErrorCode.APPROVAL_PENDING, "An earlier action of this chain is waiting for approval", {
      chain_id: chain.id,
    });
  }
  if (chain.status === "paused") {
    throw conflict(ApiErrorCode.CHAIN_PAUSED, "The chain was auto-paused by a runaway limit", {
      chain_id: chain.id,
    });
  }
}
