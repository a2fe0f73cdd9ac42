/**
 * The PolicyDecision the SDK returns (spec: "PolicyDecision"), camelCased, plus where it was
 * recorded. Converts the wire (snake_case) decision of POST /v1/chains/{id}/actions and of
 * approval-status into it.
 */
import { z } from "zod";

/** The four policy outcomes. */
export const Outcome = {
  allow: "allow",
  allow_with_flag: "allow_with_flag",
  require_approval: "require_approval",
  deny: "deny",
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

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

/** A policy decision as returned by recordAgentAction (spec fields camelCased). */
export interface PolicyDecision {
  /** allow or allow_with_flag when returned; require_approval/deny only inside errors. */
  policyDecision: Outcome;
  /** Explanation if a policy matched; "" otherwise. */
  decisionReason: string;
  decisionSource: DecisionSource;
  policyName: string | null;
  killSwitchActive: boolean;
  pauseReason: string | null;
  remediation: string | null;
  docsUrl: string | null;
  /** enforce or shadow. */
  evaluationMode: "enforce" | "shadow" | null;
  /** In shadow mode, the decision enforce mode would have made. */
  shadowDecision: Outcome | null;
  /** USD, for llm_call events. */
  estimatedCostUsd: number | null;
  autoPaused: boolean;
  /** The recorded chain event; null when nothing was recorded (fail mode allow). */
  eventId: string | null;
  /** 1-based position of the event in the chain; null when nothing was recorded. */
  sequence: number | null;
  /** The approval gate this action went through, if any. */
  approvalId: string | null;
  /** The time-boxed exception that allowed the action, or that the approval created. */
  exceptionId: string | null;
  /** The action category (financial, external_communication, ..., default). */
  category: string | null;
  /** True when policyDecision is allow_with_flag. */
  flagged: boolean;
}

const outcome = z.enum(["allow", "allow_with_flag", "require_approval", "deny"]);

/** The spec's PolicyDecision on the wire; unknown keys are tolerated. */
export const WireDecisionSchema = z.looseObject({
  policy_decision: outcome,
  decision_reason: z.string().default(""),
  decision_source: z.string().default("backend_evaluation"),
  policy_name: z.string().nullable().default(null),
  kill_switch_active: z.boolean().default(false),
  pause_reason: z.string().nullable().default(null),
  remediation: z.string().nullable().default(null),
  docs_url: z.string().nullable().default(null),
  evaluation_mode: z.enum(["enforce", "shadow"]).nullable().default(null),
  shadow_decision: outcome.nullable().default(null),
  estimated_cost_usd: z.number().nullable().default(null),
  auto_paused: z.boolean().default(false),
});
export type WireDecision = z.infer<typeof WireDecisionSchema>;

/** Response of POST /v1/chains/{chain_id}/actions: the decision plus where it was recorded. */
export const RecordActionResponseSchema = WireDecisionSchema.extend({
  event_id: z.string(),
  chain_id: z.string().optional(),
  sequence: z.number().int().nullable().optional(),
  category: z.string().nullable().default(null),
  approval_id: z.string().nullable().default(null),
  approval_expires_at: z.string().nullable().default(null),
  exception_id: z.string().nullable().default(null),
  chain_status: z.string().optional(),
});
export type RecordActionResponse = z.infer<typeof RecordActionResponseSchema>;

const knownSource = (s: string): DecisionSource =>
  s === "human_approval" || s === "fail_mode" ? s : "backend_evaluation";

/** Converts a wire decision into the SDK's camelCase PolicyDecision. */
export const fromWire = (
  w: WireDecision,
  where: {
    eventId: string | null;
    sequence?: number | null;
    approvalId?: string | null;
    exceptionId?: string | null;
    category?: string | null;
  },
): PolicyDecision => ({
  policyDecision: w.policy_decision,
  decisionReason: w.decision_reason,
  decisionSource: knownSource(w.decision_source),
  policyName: w.policy_name,
  killSwitchActive: w.kill_switch_active,
  pauseReason: w.pause_reason,
  remediation: w.remediation,
  docsUrl: w.docs_url,
  evaluationMode: w.evaluation_mode,
  shadowDecision: w.shadow_decision,
  estimatedCostUsd: w.estimated_cost_usd,
  autoPaused: w.auto_paused,
  eventId: where.eventId,
  sequence: where.sequence ?? null,
  approvalId: where.approvalId ?? null,
  exceptionId: where.exceptionId ?? null,
  category: where.category ?? null,
  flagged: w.policy_decision === "allow_with_flag",
});

/**
 * The flagged allow returned when the backend is unavailable and `failModeKey`'s fail mode is
 * allow: policyDecision allow_with_flag, decisionSource fail_mode, eventId null.
 */
export const failModeAllowDecision = (
  category: string,
  failModeKey: string,
  why: string,
): PolicyDecision => ({
  policyDecision: "allow_with_flag",
  decisionReason: `Backend unavailable (${why}); allowed without evaluation by fail mode allow (fail_modes.${failModeKey}, category ${category}); not recorded`,
  decisionSource: "fail_mode",
  policyName: `fail_modes.${failModeKey}`,
  killSwitchActive: false,
  pauseReason: null,
  remediation: "Restore connectivity to the governance service; this action was not recorded in the chain",
  docsUrl: null,
  evaluationMode: null,
  shadowDecision: null,
  estimatedCostUsd: null,
  autoPaused: false,
  eventId: null,
  sequence: null,
  approvalId: null,
  exceptionId: null,
  category,
  flagged: true,
});
