/**
 * How one recorded action advances its chain's counters (spec: "Chain" cumulative metrics,
 * "Runaway limits"), as a pure function. The chain store writes the same rule in SQL
 * (store.ts `advanceSetSql`); the hot path computes the new row with {@link advanceChain}
 * instead of reading it back (docs/adr/0006), so the two must agree — a test applies both.
 */
import type { ChainLifecycle } from "../../contract/v1/wire.js";

/** The counters of a chain row that actions advance (a subset of store.ts ChainRow). */
export interface ChainCounters {
  event_count: number;
  status: ChainLifecycle;
  total_tokens: number;
  estimated_cost_usd: number;
  financial_exposure_usd: number;
  external_communications_count: number;
  records_modified_count: number;
  domains_contacted: string[];
  external_comm_agents: string[];
}

/** What one action adds to its chain. Amounts in USD; counts and domain names. */
export interface ChainAdvance {
  /** The chain's new event_count (= the event's 1-based sequence). */
  sequence: number;
  status: ChainLifecycle;
  tokens: number;
  costUsd: number;
  /** The metrics below count only allowed actions (zero/empty otherwise; approval adds them later). */
  financialExposureUsd: number;
  externalCommunications: number;
  recordsModified: number;
  domains: string[];
  /** The acting agent: remembered when it made an external communication. */
  agentName: string;
}

/** The engine's metrics delta of one action (src/policy/engine.ts `metrics_delta`). */
export interface MetricsDelta {
  tokens: number;
  estimated_cost_usd: number;
  financial_exposure_usd: number;
  external_communications: number;
  records_modified: number;
  domains: string[];
}

/**
 * The advance of one action: tokens and cost always count; the other metrics only when the
 * action was allowed (a require_approval action adds them when approved, a denied one never).
 */
export function advanceOf(
  delta: MetricsDelta,
  opts: { sequence: number; status: ChainLifecycle; allowed: boolean; agentName: string },
): ChainAdvance {
  return {
    sequence: opts.sequence,
    status: opts.status,
    tokens: delta.tokens,
    costUsd: delta.estimated_cost_usd,
    financialExposureUsd: opts.allowed ? delta.financial_exposure_usd : 0,
    externalCommunications: opts.allowed ? delta.external_communications : 0,
    recordsModified: opts.allowed ? delta.records_modified : 0,
    domains: opts.allowed ? delta.domains : [],
    agentName: opts.agentName,
  };
}

/**
 * The chain row after `a`, as the store's statement computes it. Arrays are sets (their order
 * is not kept, as in the database); amounts add as float8 adds. Does not modify `chain`.
 */
export function advanceChain<T extends ChainCounters>(chain: T, a: ChainAdvance): T {
  // A clone written in place keeps its hidden class (see record.ts result).
  const next = { ...chain };
  next.event_count = a.sequence;
  next.status = a.status;
  next.total_tokens = chain.total_tokens + a.tokens;
  next.estimated_cost_usd = chain.estimated_cost_usd + a.costUsd;
  next.financial_exposure_usd = chain.financial_exposure_usd + a.financialExposureUsd;
  next.external_communications_count = chain.external_communications_count + a.externalCommunications;
  next.records_modified_count = chain.records_modified_count + a.recordsModified;
  if (a.domains.length) next.domains_contacted = [...new Set([...chain.domains_contacted, ...a.domains])];
  if (a.externalCommunications > 0 && !chain.external_comm_agents.includes(a.agentName)) {
    next.external_comm_agents = [...chain.external_comm_agents, a.agentName];
  }
  return next;
}
