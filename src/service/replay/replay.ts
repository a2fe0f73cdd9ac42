/**
 * Replay before enforce (issue 28; docs/policy-cel.md "Replay before enforce"): decides the
 * organization's recorded events of a window again with a candidate configuration, next to the
 * decision that was made, and reports what changed. Writes nothing: every read runs in one
 * READ ONLY, REPEATABLE READ transaction (one snapshot; the database refuses any write).
 *
 * The engine is pure, so a replay gives it the facts the live path gave it (chains/record.ts
 * evaluateAction), rebuilt per chain in sequence order from the chain's events since its first:
 * - chain: started_at, event_count = sequence − 1, and the counters (tokens, financial exposure,
 *   agents with an external communication) advanced by chains/counters.ts advanceOf/advanceChain
 *   from each earlier event's stored metrics_delta, counting its metrics only when its stored
 *   decision allowed it (an approved action's metrics are added at approval, before the chain can
 *   record its next action; a denied, withdrawn or timed-out one's never); actions_so_far (every
 *   earlier action) when the configuration reads `chain.actions`;
 * - the action as stored (the sanitized payload), the event's `principal` as identity, its
 *   `recorded_at` as now, its `org_environment` (the organization's current environment for events
 *   recorded before that column), the kill switch and pause as the stored decision reports them;
 * - the exceptions in force at `recorded_at` (granted before it, not yet expired or revoked),
 *   applied as live: only when the outcome is require_approval.
 * The facts are those of the recorded history — the counters are not re-derived from the
 * candidate's decisions (what the candidate would have let through never happened).
 * The decision compared against is the engine's: an event with an approval was require_approval
 * when decided, whatever a reviewer or a timeout made of it since.
 */

import type { WireOf } from "../../contract/v1/chains.js";
import type { ReplayResponseSchema } from "../../contract/v1/replay.js";
import { type EvaluationInput, evaluate } from "../../policy/engine.js";
import { mergePolicyConfig } from "../../policy/merge.js";
import {
  type Action,
  type ActiveException,
  type ChainActionSummary,
  configUsesChainActions,
  type Outcome,
  type PolicyConfig,
  PolicyConfigPatchSchema,
} from "../../policy/schema.js";
import { advanceChain, advanceOf, type ChainCounters, type MetricsDelta } from "../chains/counters.js";
import {
  ChainColumn,
  chainOfPage,
  chainsOfPage,
  EventColumn,
  eventOfRow,
  type ReplayChainRow,
  type ReplayEventRow,
  type ReplayException,
  type ReplayRow,
} from "./store.js";

/** The replay route's answer (src/contract/v1/replay.ts ReplayResponseSchema). */
export type ReplayAnswer = WireOf<typeof ReplayResponseSchema>;
type Change = ReplayAnswer["sample"][number];

/** What a replay decided: the answer's counts, changes and sample (replayPolicy adds the rest). */
export type ReplayTally = Pick<
  ReplayAnswer,
  "events_read" | "events_replayed" | "chains_read" | "changed" | "changes" | "sample"
>;

/** A Replayer's options. */
export interface ReplayerOptions {
  /** The organization's effective configuration with the candidate combined in. */
  config: PolicyConfig;
  /** Environment for events recorded before chain_events.org_environment existed. */
  orgEnvironment: string;
  exceptions: readonly ReplayException[];
  fromMs: number;
  toMs: number;
  sampleSize: number;
}

/**
 * The chains of one page to decide, in order: chain k has `counts[k]` rows in `rows`, the rows of
 * chain 0 first. A chain's rows are its events from sequence 1 up to the first gap (pageToDecide
 * cuts them there: the events a Replayer reads).
 */
export interface PageToDecide {
  chains: ReplayChainRow[];
  counts: number[];
  rows: ReplayRow[];
}

const NO_DELTA: MetricsDelta = {
  tokens: 0,
  estimated_cost_usd: 0,
  financial_exposure_usd: 0,
  external_communications: 0,
  records_modified: 0,
  domains: [],
};

/**
 * The outcome the engine recorded for an event: require_approval for an event that opened an
 * approval (its stored decision is the reviewer's, a timeout's or a withdrawal's once resolved),
 * else the stored policy_decision (time-boxed exceptions applied, as the engine applied them).
 */
export const recordedEngineOutcome = (e: Pick<ReplayEventRow, "approval_id" | "decision">): Outcome =>
  e.approval_id !== null || e.decision.decision_source === "human_approval"
    ? "require_approval"
    : e.decision.policy_decision;

/** Whether the event's stored (final) decision let the action run: its metrics count for the chain. */
const allowedInTheEnd = (e: ReplayEventRow): boolean =>
  e.decision.policy_decision === "allow" || e.decision.policy_decision === "allow_with_flag";

/**
 * Rebuilds one chain's state event by event, as the live path saw it before each event. Pure.
 * `before(e)` gives the engine's ChainState for `e` (call in sequence order, then `after(e)`).
 */
export class ChainReconstruction {
  private counters: ChainCounters = {
    event_count: 0,
    status: "open",
    total_tokens: 0,
    estimated_cost_usd: 0,
    financial_exposure_usd: 0,
    external_communications_count: 0,
    records_modified_count: 0,
    domains_contacted: [],
    external_comm_agents: [],
  };
  private readonly actions: ChainActionSummary[] = [];

  constructor(
    private readonly startedAtMs: number,
    private readonly withActions: boolean,
  ) {}

  /** The number of events applied so far (the next event's sequence − 1). */
  get eventCount(): number {
    return this.counters.event_count;
  }

  /** The engine's ChainState for the next event. `actions_so_far` is shared: read it before `after`. */
  before(): EvaluationInput["chain"] {
    const c = this.counters;
    const chain: EvaluationInput["chain"] = {
      started_at_ms: this.startedAtMs,
      event_count: c.event_count,
      total_tokens: c.total_tokens,
      financial_exposure_usd: c.financial_exposure_usd,
      agents_with_external_communication: c.external_comm_agents,
    };
    if (this.withActions) chain.actions_so_far = this.actions;
    return chain;
  }

  /** Applies `e` as the live path (and an approval, if it was approved) applied it. */
  after(e: ReplayEventRow): void {
    const advance = advanceOf(e.facts.metrics_delta ?? NO_DELTA, {
      sequence: e.sequence,
      status: "open",
      allowed: allowedInTheEnd(e),
      agentName: e.agent_name,
    });
    this.counters = advanceChain(this.counters, advance);
    if (this.withActions) {
      this.actions.push({ name: e.action_name, type: e.action_type, agent_name: e.agent_name });
    }
  }
}

/** The engine input of a recorded event, with the chain state it was decided on. */
export function replayInput(
  e: ReplayEventRow,
  chain: EvaluationInput["chain"],
  config: PolicyConfig,
  orgEnvironment: string,
): EvaluationInput {
  const d = e.decision;
  const action: Action = {
    agent_name: e.agent_name,
    action_type: e.action_type,
    action_name: e.action_name,
    payload: e.payload,
    parent_agent_name: e.parent_agent_name,
  };
  return {
    config,
    org: {
      kill_switch: {
        active: d.kill_switch_active === true,
        reason: d.kill_switch_reason,
      },
      pause: { active: d.pause_reason != null, reason: d.pause_reason ?? null },
      environment: e.org_environment ?? orgEnvironment,
    },
    chain,
    action,
    exceptions: [],
    nowMs: e.recorded_at_ms,
    identity: e.principal,
  };
}

/** The exceptions of `all` in force at `atMs` for the action's agent and action type (the engine matches the domain). */
export const exceptionsAt = (
  all: readonly ReplayException[],
  e: Pick<ReplayEventRow, "agent_name" | "action_type">,
  atMs: number,
): ActiveException[] =>
  all.filter(
    (x) =>
      x.agent_name === e.agent_name &&
      x.action_type === e.action_type &&
      x.created_at_ms <= atMs &&
      (x.revoked_at_ms === null || x.revoked_at_ms > atMs),
  );

/** The candidate's decision on a recorded event, exceptions applied as the live path applies them. */
export function decideAgain(input: EvaluationInput, exceptions: readonly ReplayException[]) {
  let ev = evaluate(input);
  const d = ev.decision;
  if (d.policy_decision === "require_approval" || d.shadow_decision === "require_approval") {
    const active = exceptionsAt(exceptions, input.action, input.nowMs);
    if (active.length) ev = evaluate({ ...input, exceptions: active });
  }
  return ev;
}

/**
 * Accumulates a replay over chains handed to it in order. Pure (no I/O): decidePage feeds it a
 * page on a replay worker thread, and the tests can feed it directly.
 */
export class Replayer {
  eventsRead = 0;
  eventsReplayed = 0;
  chainsRead = 0;
  changed = 0;
  readonly changes: Record<string, number> = {};
  readonly sample: Change[] = [];
  private readonly merged = new Map<string, { config: PolicyConfig; withActions: boolean }>();

  constructor(private readonly opts: ReplayerOptions) {}

  /** What was decided so far. */
  tally(): ReplayTally {
    return {
      events_read: this.eventsRead,
      events_replayed: this.eventsReplayed,
      chains_read: this.chainsRead,
      changed: this.changed,
      changes: this.changes,
      sample: this.sample,
    };
  }

  /** Decides a page's chains in order. */
  page(page: PageToDecide): void {
    let i = 0;
    for (let k = 0; k < page.chains.length; k++) {
      const n = page.counts[k]!;
      const events: ReplayEventRow[] = new Array(n);
      const chainId = page.chains[k]!.id;
      for (let j = 0; j < n; j++) events[j] = eventOfRow(page.rows[i + j]!, chainId);
      this.chain(page.chains[k]!, events);
      i += n;
    }
  }

  /** The chain's effective configuration: the candidate organization config ← its policy_config (as record.ts merges). */
  private configOf(chain: ReplayChainRow) {
    const key = chain.policy_config;
    let hit = this.merged.get(key);
    if (!hit) {
      const patch = PolicyConfigPatchSchema.parse(JSON.parse(chain.policy_config));
      const config = mergePolicyConfig(this.opts.config, patch);
      hit = { config, withActions: configUsesChainActions(config) };
      this.merged.set(key, hit);
    }
    return hit;
  }

  /**
   * Replays one chain: `events` are its events in sequence order starting at 1 (those before the
   * window rebuild its state; those in [from, to) are decided again). A gap in the sequence
   * (an event recorded out of time order) ends the chain there: later states would be wrong.
   */
  chain(chain: ReplayChainRow, events: readonly ReplayEventRow[]): void {
    const { config, withActions } = this.configOf(chain);
    const state = new ChainReconstruction(chain.started_at_ms, withActions);
    this.chainsRead++;
    for (const e of events) {
      if (e.sequence !== state.eventCount + 1) break;
      this.eventsRead++;
      if (e.recorded_at_ms >= this.opts.fromMs && e.recorded_at_ms < this.opts.toMs) {
        this.eventsReplayed++;
        const ev = decideAgain(
          replayInput(e, state.before(), config, this.opts.orgEnvironment),
          this.opts.exceptions,
        );
        const before = recordedEngineOutcome(e);
        const after = ev.decision.policy_decision;
        if (before !== after) this.record(e, before, ev.decision);
      }
      state.after(e);
    }
  }

  private record(e: ReplayEventRow, before: Outcome, after: ReturnType<typeof evaluate>["decision"]) {
    this.changed++;
    const kind = `${before}→${after.policy_decision}`;
    this.changes[kind] = (this.changes[kind] ?? 0) + 1;
    if (this.sample.length < this.opts.sampleSize) {
      this.sample.push({
        event_id: e.id,
        chain_id: e.chain_id,
        sequence: e.sequence,
        recorded_at: new Date(e.recorded_at_ms).toISOString(),
        agent_name: e.agent_name,
        action_type: e.action_type,
        action_name: e.action_name,
        before: { outcome: before, policy_name: e.decision.policy_name },
        after: {
          outcome: after.policy_decision,
          policy_name: after.policy_name,
          decision_reason: after.decision_reason,
        },
      });
    }
  }
}

/**
 * The chains of a page (store.ts chainsOfPage) and their first `keep` events in all, in order,
 * each chain's events cut at its first gap in the sequence (those a Replayer reads: its events
 * from sequence 1 on, in order).
 */
export function pageToDecide(page: readonly unknown[][], keep: number): PageToDecide {
  const chains: ReplayChainRow[] = [];
  const counts: number[] = [];
  const kept: ReplayRow[] = [];
  let left = keep;
  for (const c of page) {
    if (left <= 0) break;
    const events = c[ChainColumn.events] as ReplayRow[];
    const m = Math.min(events.length, left);
    left -= m;
    let n = 0;
    while (n < m && events[n]![EventColumn.sequence] === n + 1) kept.push(events[n++]!);
    chains.push(chainOfPage(c));
    counts.push(n);
  }
  return { chains, counts, rows: kept };
}

/**
 * Decides the first `keep` events of a page (store.ts ReplayPage.json) with a Replayer of its own:
 * pages hold whole chains, so pages decided apart and merged in order (mergeTallies) answer as
 * one Replayer fed page after page. Runs on a replay worker thread (worker.ts).
 * @throws SyntaxError / TypeError when `json` is not a JSON array of chains.
 */
export function decidePage(options: ReplayerOptions, json: string, keep: number): ReplayTally {
  const replayer = new Replayer(options);
  replayer.page(pageToDecide(chainsOfPage(json), keep));
  return replayer.tally();
}

/** The tallies of a replay's pages, in page order, as one: counts added, the sample's first `sampleSize`. */
export function mergeTallies(tallies: readonly ReplayTally[], sampleSize: number): ReplayTally {
  const all: ReplayTally = {
    events_read: 0,
    events_replayed: 0,
    chains_read: 0,
    changed: 0,
    changes: {},
    sample: [],
  };
  for (const t of tallies) {
    all.events_read += t.events_read;
    all.events_replayed += t.events_replayed;
    all.chains_read += t.chains_read;
    all.changed += t.changed;
    for (const [kind, n] of Object.entries(t.changes)) all.changes[kind] = (all.changes[kind] ?? 0) + n;
    for (const change of t.sample) if (all.sample.length < sampleSize) all.sample.push(change);
  }
  return all;
}
