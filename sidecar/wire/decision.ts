/**
 * The one mapping of the decision at the gRPC edge: the wire decision (the contract's JSON
 * decision as the SDK returns it, snake_case) → tollgate.v1.Decision (proto/tollgate/v1/gateway.proto).
 */
import type { PolicyDecision } from "../../src/sdk/index.js";
import type { Decision } from "../generated/tollgate/v1/Decision.js";

/**
 * The wire decision as the proto Decision: the same snake_case names; a null optional is left
 * absent; `chain_id` is the chain the call named; `flagged` is policy_decision allow_with_flag.
 */
export function toProtoDecision(d: PolicyDecision, chainId: string): Decision {
  return {
    policy_decision: d.policy_decision,
    decision_reason: d.decision_reason,
    decision_source: d.decision_source,
    policy_name: d.policy_name ?? undefined,
    kill_switch_active: d.kill_switch_active,
    pause_reason: d.pause_reason ?? undefined,
    remediation: d.remediation ?? undefined,
    docs_url: d.docs_url ?? undefined,
    evaluation_mode: d.evaluation_mode ?? undefined,
    shadow_decision: d.shadow_decision ?? undefined,
    estimated_cost_usd: d.estimated_cost_usd ?? undefined,
    auto_paused: d.auto_paused,
    chain_id: chainId,
    event_id: d.event_id ?? undefined,
    sequence: d.sequence ?? undefined,
    approval_id: d.approval_id ?? undefined,
    exception_id: d.exception_id ?? undefined,
    category: d.category ?? undefined,
    flagged: d.policy_decision === "allow_with_flag",
  };
}
