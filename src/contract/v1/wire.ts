/**
 * Wire shapes shared by the service and the client libraries that are not the policy engine's
 * own (those are in src/policy/schema.ts: Action, PolicyDecision, the policy configuration) nor
 * the receipt's (src/receipts/schema.ts, whose outcome and exception-duration shapes are re-exported
 * here): lifecycle states, outcome reports, their limits.
 * Snake_case, as every wire shape.
 */
import { z } from "zod";

/** Chain lifecycle states (spec: "States and transitions"; pending_approval is the spec's, the rest ours). */
export const ChainLifecycle = {
  open: "open",
  pending_approval: "pending_approval",
  paused: "paused",
  completed: "completed",
  failed: "failed",
} as const;
export type ChainLifecycle = (typeof ChainLifecycle)[keyof typeof ChainLifecycle];

/** Approval states (spec: "Approval request"; cancelled is ours: withdrawn by the caller). */
export const ApprovalStatus = {
  pending: "pending",
  approved: "approved",
  denied: "denied",
  timed_out: "timed_out",
  cancelled: "cancelled",
} as const;
export type ApprovalStatus = (typeof ApprovalStatus)[keyof typeof ApprovalStatus];
export const ApprovalStatusSchema = z.enum(["pending", "approved", "denied", "timed_out", "cancelled"]);

/**
 * What happened when an allowed action was carried out, as reported back to the service, and
 * the exception durations: both are signed into receipts, so the receipt format
 * (src/receipts/schema.ts) declares them and the contract re-exports them (imports point from the
 * contract to receipts, never back).
 */
export {
  type EventOutcome,
  EventOutcomeSchema,
  type ExceptionDuration,
  ExceptionDurationSchema,
} from "../../receipts/schema.js";

/** Most outcomes one POST /v1/outcomes may carry. */
export const MAX_OUTCOMES_PER_BATCH = 500;
