/**
 * Wire shapes shared by the service and the client libraries that are not the policy engine's
 * own (those are in src/policy/schema.ts: Action, PolicyDecision, the policy configuration) nor
 * the receipt's (src/receipts/schema.ts): lifecycle states, outcome reports, their limits.
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

/** Lowercase hex SHA-256 without prefix. */
const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters");

/**
 * What happened when an allowed action was carried out, as reported back to the service
 * (POST .../events/{event_id}/outcome, POST /v1/outcomes); receipts carry it in canonical order.
 */
export const EventOutcomeSchema = z
  .object({
    status: z.enum(["success", "error"]),
    /** Class or kind of the error; null on success. */
    error_class: z.string().nullable(),
    /** Milliseconds the action took. */
    duration_ms: z.number().nonnegative(),
    /** Lowercase hex SHA-256 (no prefix) of the tool result; null when not reported. */
    result_sha256: Sha256Hex.nullable(),
  })
  .strict();
export type EventOutcome = z.infer<typeof EventOutcomeSchema>;

/** Most outcomes one POST /v1/outcomes may carry. */
export const MAX_OUTCOMES_PER_BATCH = 500;

/** Exception durations of the spec: 1 hour, 1 day, 1 week, 1 month (a calendar month, UTC). */
export const ExceptionDurationSchema = z.enum(["1h", "1d", "1w", "1m"]);
export type ExceptionDuration = z.infer<typeof ExceptionDurationSchema>;
