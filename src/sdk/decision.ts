/**
 * The PolicyDecision the SDK returns (spec: "PolicyDecision"): the contract's wire decision with
 * where it was recorded, as parsed. Like every data object the SDK returns (receipts,
 * verification results) it keeps the wire's snake_case names; the API surface (methods, option
 * objects, error properties) is camelCase.
 */
import { z } from "zod";
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
 * The decision recordAgentAction returns: the wire decision of POST /v1/chains/{id}/actions
 * exactly as the contract's RecordActionResponseSchema parses it (snake_case, defaults filled,
 * where it was recorded: event_id, sequence, category, approval_id, exception_id), with no
 * second conversion. `event_id` is null only in the fail-mode allow the SDK returns itself
 * when the service is unreachable (nothing was recorded). A flagged allow is `policy_decision
 * === "allow_with_flag"`.
 */
export const PolicyDecisionSchema = RecordActionResponseSchema.extend({ event_id: z.string().nullable() });
export type PolicyDecision = z.infer<typeof PolicyDecisionSchema>;

/** Where a decision read apart from its RecordActionResponse was recorded. */
export type DecisionWhere = Pick<
  PolicyDecision,
  "event_id" | "category" | "approval_id" | "exception_id" | "approval_expires_at"
> &
  Partial<Pick<PolicyDecision, "sequence" | "chain_id">>;

/**
 * A decision the service returns apart from where it was recorded (approval-status, a chain's
 * events) joined with that place: the same wire object a RecordActionResponse is, field for
 * field (nothing renamed, dropped or added).
 */
export const recordedDecision = (decision: WireDecision, where: DecisionWhere): PolicyDecision => ({
  ...decision,
  ...where,
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
  category,
  approval_id: null,
  approval_expires_at: null,
  exception_id: null,
});
