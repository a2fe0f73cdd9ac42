/**
 * The pure parts of replay (src/service/replay/replay.ts, issue 28): which outcome the engine
 * recorded, how a chain's state is rebuilt from its events (metrics of allowed and approved
 * actions only), and which exceptions were in force at an event's time.
 */
import { describe, expect, it } from "vitest";
import {
  ChainReconstruction,
  exceptionsAt,
  recordedEngineOutcome,
} from "../../../src/service/replay/replay.js";
import type { ReplayEventRow, ReplayException } from "../../../src/service/replay/store.js";

const delta = (usd: number, ext = 0) => ({
  tokens: 10,
  estimated_cost_usd: 0,
  financial_exposure_usd: usd,
  external_communications: ext,
  records_modified: 0,
  domains: ext ? ["mail.example.com"] : [],
});
const event = (sequence: number, over: Partial<ReplayEventRow> = {}): ReplayEventRow => ({
  id: `e${sequence}`,
  chain_id: "c",
  sequence,
  agent_name: "a",
  parent_agent_name: null,
  action_type: "financial",
  action_name: "pay",
  payload: {},
  facts: {},
  decision: {
    policy_decision: "allow",
    decision_source: "backend_evaluation",
    policy_name: null,
    kill_switch_reason: null,
    kill_switch_active: false,
    pause_reason: null,
  },
  approval_id: null,
  recorded_at_ms: 1000 * sequence,
  principal: null,
  org_environment: "production",
  ...over,
});
const decided = (policy_decision: "allow" | "deny" | "allow_with_flag", human = false) => ({
  ...event(0).decision,
  policy_decision,
  decision_source: human ? ("human_approval" as const) : ("backend_evaluation" as const),
});

describe("replay reconstruction", () => {
  it("an event that opened an approval was require_approval, however it was resolved", () => {
    expect(recordedEngineOutcome(event(1, { approval_id: "x", decision: decided("allow", true) }))).toBe(
      "require_approval",
    );
    expect(recordedEngineOutcome(event(1, { approval_id: "x", decision: decided("deny") }))).toBe(
      "require_approval",
    );
    expect(recordedEngineOutcome(event(1, { decision: decided("allow_with_flag") }))).toBe("allow_with_flag");
    expect(recordedEngineOutcome(event(1, { decision: decided("deny") }))).toBe("deny");
  });

  it("counts tokens always and other metrics only for allowed or approved actions", () => {
    const r = new ChainReconstruction(500, true);
    expect(r.before()).toMatchObject({ started_at_ms: 500, event_count: 0, financial_exposure_usd: 0 });
    r.after(event(1, { facts: { metrics_delta: delta(100) } }));
    r.after(
      event(2, { facts: { metrics_delta: delta(1000) }, approval_id: "x", decision: decided("deny", true) }),
    );
    r.after(
      event(3, { facts: { metrics_delta: delta(50) }, approval_id: "y", decision: decided("allow", true) }),
    );
    r.after(
      event(4, { facts: { metrics_delta: delta(0, 1) }, agent_name: "mailer", decision: decided("deny") }),
    );
    r.after(event(5, { facts: { metrics_delta: delta(0, 1) }, agent_name: "m2", action_name: "send" }));
    const s = r.before();
    expect(s.event_count).toBe(5);
    expect(s.total_tokens).toBe(50);
    expect(s.financial_exposure_usd).toBe(150);
    expect(s.agents_with_external_communication).toEqual(["m2"]);
    expect(s.actions_so_far?.map((a) => a.name)).toEqual(["pay", "pay", "pay", "pay", "send"]);
    expect(new ChainReconstruction(0, false).before().actions_so_far).toBeUndefined();
  });

  it("exceptions count from their grant until expiry or revocation, for the same agent and action type", () => {
    const x: ReplayException = {
      exception_id: "x",
      agent_name: "a",
      action_type: "financial",
      destination_domain: null,
      expires_at_ms: 10_000,
      created_at_ms: 2000,
      revoked_at_ms: 5000,
    };
    const e = { agent_name: "a", action_type: "financial" };
    expect(exceptionsAt([x], e, 1999)).toEqual([]);
    expect(exceptionsAt([x], e, 2000)).toEqual([x]);
    expect(exceptionsAt([x], e, 5000)).toEqual([]);
    expect(exceptionsAt([{ ...x, revoked_at_ms: null }], e, 9000)).toHaveLength(1);
    expect(exceptionsAt([x], { ...e, agent_name: "b" }, 3000)).toEqual([]);
  });
});
