/**
 * Wire shapes of the approval routes (spec: "Approval request", "Reviewer approves" / "Reviewer
 * denies", approval polling): request bodies the service validates, responses the client
 * libraries read (tolerant of more; the service's producers are checked against them, see
 * chains.ts). Snake_case, as every wire shape.
 */
import { z } from "zod";
import { WireDecisionSchema } from "./chains.js";
import { ApprovalStatusSchema, ExceptionDurationSchema } from "./wire.js";

/** Body of POST /v1/approvals/{approval_id}/decision. */
export const DecideApprovalSchema = z
  .object({
    decision: z.enum(["approve", "deny"]),
    notes: z.string().max(2000).optional(),
    exception_duration: ExceptionDurationSchema.optional(),
  })
  .strict()
  .refine((b) => b.decision === "approve" || b.exception_duration === undefined, {
    message: "an exception can only be granted when approving",
    path: ["exception_duration"],
  });
export type DecideApproval = z.infer<typeof DecideApprovalSchema>;

/** Body of POST /v1/approvals/{approval_id}/withdraw (absent body = no reason). */
export const WithdrawApprovalSchema = z.preprocess(
  (v) => v ?? {},
  z.object({ reason: z.string().max(500).optional() }).strict(),
);
export type WithdrawApproval = z.infer<typeof WithdrawApprovalSchema>;

/** One approval (GET /v1/approvals/{id}, approval-status, decision and withdraw answers). */
export const ApprovalViewSchema = z.looseObject({
  approval_id: z.string(),
  status: ApprovalStatusSchema,
  condition: z.string().nullable().default(null),
  notes: z.string().nullable().optional(),
  decision: WireDecisionSchema,
  exception: z.looseObject({ exception_id: z.string() }).nullable().default(null),
  expires_at: z.string().optional(),
});
export type ApprovalView = z.infer<typeof ApprovalViewSchema>;

/** GET /v1/chains/{chain_id}/approval-status. */
export const ApprovalStatusResponseSchema = z.looseObject({
  chain_id: z.string(),
  chain_status: z.string(),
  approval: ApprovalViewSchema.nullable(),
});
export type ApprovalStatusResponse = z.infer<typeof ApprovalStatusResponseSchema>;
