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
  const { status, decidedBy, notes, reason } = resolutionOf(outcome);
  const byReviewer = status === "approved" || status === "denied";
  return {
    status,
    decidedBy,
    notes,
    decision: {
      ...requested,
      policy_decision: status === "approved" ? "allow" : "deny",
      decision_source: byReviewer ? "human_approval" : "backend_evaluation",
      decision_reason: reason,
    },
  };
}

/** Status, decider, notes and decision_reason of each outcome. */
function resolutionOf(o: ApprovalOutcome): Omit<FinalDecision, "decision"> & { reason: string } {
  switch (o.kind) {
    case "approved":
      return {
        status: "approved",
        decidedBy: o.decidedBy,
        notes: o.notes,
        reason: o.notes ? `Approved by ${o.decidedBy}: ${o.notes}` : `Approved by ${o.decidedBy}`,
      };
    case "denied":
      return {
        status: "denied",
        decidedBy: o.decidedBy,
        notes: o.notes,
        reason: o.notes ?? DENIED_WITHOUT_NOTES,
      };
    case "timed_out":
      return { status: "timed_out", decidedBy: null, notes: null, reason: o.condition };
    case "withdrawn":
      return {
        status: "cancelled",
        decidedBy: o.withdrawnBy,
        notes: o.reason,
        reason: o.reason ? `Withdrawn by the caller: ${o.reason}` : "Withdrawn by the caller",
      };
    case "chain_completed":
      return {
        status: "cancelled",
        decidedBy: null,
        notes: null,
        reason: "Chain completed before a decision",
      };
  }
}
