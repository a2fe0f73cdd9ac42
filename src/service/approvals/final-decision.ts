/**
 * The one builder of an approval's final decision: what a pending approval's action becomes once a
 * reviewer, the clock or the caller resolved it (spec: "States and transitions", the
 * pending_approval rows; "Resources and their fields" → PolicyDecision `decision_source`).
 * Pure: store.ts writeResolution writes what it returns.
 */
import type { ApprovalStatus } from "../../contract/v1/wire.js";
import type { PolicyDecision } from "../../policy/schema.js";

/** The condition of a reviewer's denial without notes (also the approval view's `condition`). */
export const DENIED_WITHOUT_NOTES = "Denied by reviewer";

/** How a pending approval ended; notes and reasons are already redacted and trimmed (null when empty). */
export type ApprovalOutcome =
  /** A reviewer approved (with or without a time-boxed exception, which is granted beside it). */
  | { kind: "approved"; decidedBy: string; notes: string | null }
  /** A reviewer denied. */
  | { kind: "denied"; decidedBy: string; notes: string | null }
  /** The approval timed out; `condition` contains the spec's "not resolved within". */
  | { kind: "timed_out"; condition: string }
  /** The caller withdrew its own approval (beyond the spec: an MCP task cancelled, a gRPC caller gone). */
  | { kind: "withdrawn"; withdrawnBy: string; reason: string | null }
  /** The chain was completed while the approval was pending. */
  | { kind: "chain_completed" };

/** What resolving an approval writes: its status, the event's final decision, who decided, the notes. */
export interface FinalDecision {
  status: Exclude<ApprovalStatus, "pending">;
  decision: PolicyDecision;
  decidedBy: string | null;
  notes: string | null;
}

/**
 * The final decision of an approval requested with `requested` (the engine's require_approval
 * decision, whose other fields — policy name, evaluation mode, cost... — are kept).
 * Per the spec's pending_approval rows: a reviewer's approval is `allow` and a reviewer's denial
 * `deny`, both with decision_source `human_approval`; a backend timeout is `deny` with a condition
 * containing "not resolved within" and decision_source `backend_evaluation` (no human decided).
 * A withdrawal and a completion of the chain are likewise `deny` from `backend_evaluation`.
 */
export function finalDecision(requested: PolicyDecision, outcome: ApprovalOutcome): FinalDecision {
  const decide = (
    status: FinalDecision["status"],
    by: { decidedBy: string | null; notes: string | null },
    decision: Pick<PolicyDecision, "policy_decision" | "decision_source" | "decision_reason">,
  ): FinalDecision => ({ status, decision: { ...requested, ...decision }, ...by });
  switch (outcome.kind) {
    case "approved": {
      const { decidedBy, notes } = outcome;
      return decide(
        "approved",
        { decidedBy, notes },
        {
          policy_decision: "allow",
          decision_source: "human_approval",
          decision_reason: notes ? `Approved by ${decidedBy}: ${notes}` : `Approved by ${decidedBy}`,
        },
      );
    }
    case "denied":
      return decide(
        "denied",
        { decidedBy: outcome.decidedBy, notes: outcome.notes },
        {
          policy_decision: "deny",
          decision_source: "human_approval",
          decision_reason: outcome.notes ?? DENIED_WITHOUT_NOTES,
        },
      );
    case "timed_out":
      return decide(
        "timed_out",
        { decidedBy: null, notes: null },
        {
          policy_decision: "deny",
          decision_source: "backend_evaluation",
          decision_reason: outcome.condition,
        },
      );
    case "withdrawn":
      return decide(
        "cancelled",
        { decidedBy: outcome.withdrawnBy, notes: outcome.reason },
        {
          policy_decision: "deny",
          decision_source: "backend_evaluation",
          decision_reason: outcome.reason
            ? `Withdrawn by the caller: ${outcome.reason}`
            : "Withdrawn by the caller",
        },
      );
    case "chain_completed":
      return decide(
        "cancelled",
        { decidedBy: null, notes: null },
        {
          policy_decision: "deny",
          decision_source: "backend_evaluation",
          decision_reason: "Chain completed before a decision",
        },
      );
  }
}
