/**
 * The PolicyDecision the SDK returns (spec: "PolicyDecision"), plus where it was recorded. Like
 * every data object the SDK returns (receipts, verification results) it keeps the wire's
 * snake_case names; the API surface (methods, option objects, error properties) is camelCase.
 * fromWire turns the wire decision of POST /v1/chains/{id}/actions and of approval-status into it.
 */

import {
  type RecordActionResponse,
  RecordActionResponseSchema,
  type WireDecision,
  WireDecisionSchema,
} from "../contract/v1/chains.js";
import { Outcome } from "../policy/schema.js";

// The four policy outcomes are the wire's (src/policy/schema.ts); the SDK re-exports them.
export {
  Outcome,
  type RecordActionResponse,
  RecordActionResponseSchema,
  type WireDecision,
  WireDecisionSchema,
};

/**
 * Where a decision came from: the spec's backend_evaluation and human_approval, plus our
 * fail_mode for the flagged allow returned when the backend is unreachable and the category's
 * fail mode is allow (nothing was evaluated or recorded).
 */
export const DecisionSource = {
  backend_evaluation: "backend_evaluation",
  human_approval: "human_approval",
  fail_mode: "fail_mode",
} as const;
export type DecisionSource = (typeof DecisionSource)[keyof typeof DecisionSource];

/**
 * A policy decision as returned by recordAgentAction: the spec's PolicyDecision in the wire's
 * snake_case (as the Python library's), plus where it was recorded and `flagged`.
 */
export interface PolicyDecision {
  /** allow or allow_with_flag when returned; require_approval/deny only inside errors. */
  policy_decision: Outcome;
  /** Explanation if a policy matched; "" otherwise. */
  decision_reason: string;
  decision_source: DecisionSource;
  policy_name: string | null;
  kill_switch_active: boolean;
  pause_reason: string | null;
  remediation: string | null;
  docs_url: string | null;
  /** enforce or shadow. */
  evaluation_mode: "enforce" | "shadow" | null;
  /** In shadow mode, the decision enforce mode would have made. */
  shadow_decision: Outcome | null;
  /** USD, for llm_call events. */
  estimated_cost_usd: number | null;
  auto_paused: boolean;
  /** The recorded chain event; null when nothing was recorded (fail mode allow). */
  event_id: string | null;
  /** 1-based position of the event in the chain; null when nothing was recorded. */
  sequence: number | null;
  /** The approval gate this action went through, if any. */
  approval_id: string | null;
  /** The time-boxed exception that allowed the action, or that the approval created. */
  exception_id: string | null;
  /** The action category (financial, external_communication, ..., default). */
  category: string | null;
  /** True when policy_decision is allow_with_flag (a convenience; not on the wire). */
  flagged: boolean;
}

/** Where a decision was recorded: the fields fromWire attaches to a wire decision. */
export type DecisionWhere = Pick<PolicyDecision, "event_id"> &
  Partial<Pick<PolicyDecision, "sequence" | "approval_id" | "exception_id" | "category">>;

const knownSource = (s: string): DecisionSource =>
  s === "human_approval" || s === "fail_mode" ? s : "backend_evaluation";

/**
 * The one conversion of a wire decision into the SDK's PolicyDecision: the same snake_case
 * names, defaults filled (by WireDecisionSchema), unknown wire keys dropped, `where` attached.
 * A RecordActionResponse is its own `where`.
 */
export const fromWire = (w: WireDecision, where: DecisionWhere): PolicyDecision => ({
  policy_decision: w.policy_decision,
  decision_reason: w.decision_reason,
  decision_source: knownSource(w.decision_source),
  policy_name: w.policy_name,
  kill_switch_active: w.kill_switch_active,
  pause_reason: w.pause_reason,
  remediation: w.remediation,
  docs_url: w.docs_url,
  evaluation_mode: w.evaluation_mode,
  shadow_decision: w.shadow_decision,
  estimated_cost_usd: w.estimated_cost_usd,
  auto_paused: w.auto_paused,
  event_id: where.event_id,
  sequence: where.sequence ?? null,
  approval_id: where.approval_id ?? null,
  exception_id: where.exception_id ?? null,
  category: where.category ?? null,
  flagged: w.policy_decision === "allow_with_flag",
});

/**
 * The flagged allow returned when the backend is unavailable and `failModeKey`'s fail mode is
 * allow: policy_decision allow_with_flag, decision_source fail_mode, event_id null.
 */
export const failModeAllowDecision = (
  category: string,
  failModeKey: string,
  why: string,
): PolicyDecision => ({
  policy_decision: "allow_with_flag",
  decision_reason: `Backend unavailable (${why}); allowed without evaluation by fail mode allow (fail_modes.${failModeKey}, category ${category}); not recorded`,
  decision_source: "fail_mode",
  policy_name: `fail_modes.${failModeKey}`,
  kill_switch_active: false,
  pause_reason: null,
  remediation: "Restore connectivity to the governance service; this action was not recorded in the chain",
  docs_url: null,
  evaluation_mode: null,
  shadow_decision: null,
  estimated_cost_usd: null,
  auto_paused: false,
  event_id: null,
  sequence: null,
  approval_id: null,
  exception_id: null,
  category,
  flagged: true,
});
