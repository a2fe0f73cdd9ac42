/**
 * Approvals for reviewers: GET /v1/approvals, GET /v1/approvals/{approval_id},
 * POST /v1/approvals/{approval_id}/decision (spec: "Reviewer approves" / "Reviewer denies");
 * for the caller that waits: POST /v1/approvals/{approval_id}/withdraw (beyond the spec).
 */

import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  ApprovalViewSchema,
  DecideApprovalSchema,
  WithdrawApprovalSchema,
} from "../../contract/v1/approvals.js";
import { ApprovalListSchema } from "../../contract/v1/responses.js";
import { ApprovalStatusSchema } from "../../contract/v1/wire.js";
import { guard, principalLabel } from "../auth.js";
import type { Metrics } from "../metrics.js";
import { decideApproval, type ResolveDeps, withdrawApproval } from "./decide.js";
import { getApproval, listApprovals } from "./views.js";

/** What the approval routes use. */
export interface ApprovalRouteDeps extends ResolveDeps {
  metrics: Metrics;
}

const Params = z.object({ approval_id: z.uuid() });

/** The approval routes (see the module comment). */
export const approvalRoutes: FastifyPluginAsyncZod<ApprovalRouteDeps> = async (app, deps) => {
  /** tollgate_approval_wait_seconds: request to resolution of an approval just resolved. */
  const observeWait = (a: { status: string; requested_at: string; decided_at: string | null }) =>
    deps.metrics.approvalWait.observe(
      { status: a.status },
      Math.max(0, (Date.parse(a.decided_at ?? a.requested_at) - Date.parse(a.requested_at)) / 1000),
    );

  app.get(
    "/v1/approvals",
    {
      schema: {
        querystring: z.object({
          status: ApprovalStatusSchema.optional(),
          limit: z.coerce.number().int().min(1).max(500).default(100),
        }),
        response: { 200: ApprovalListSchema },
      },
    },
    async (req) => {
      const { orgId } = guard.member(req.principal);
      return { approvals: await listApprovals(deps.db, orgId, req.query) };
    },
  );

  app.get(
    "/v1/approvals/:approval_id",
    { schema: { params: Params, response: { 200: ApprovalViewSchema } } },
    async (req) => {
      const { orgId } = guard.member(req.principal);
      return getApproval(deps.db, orgId, req.params.approval_id);
    },
  );

  app.post(
    "/v1/approvals/:approval_id/decision",
    { schema: { params: Params, body: DecideApprovalSchema, response: { 200: ApprovalViewSchema } } },
    async (req) => {
      const orgId = guard.approver(req.principal);
      const result = await decideApproval(deps, {
        orgId,
        approvalId: req.params.approval_id,
        body: req.body,
        decidedBy: principalLabel(req.principal!),
      });
      observeWait(result);
      return result;
    },
  );

  app.post(
    "/v1/approvals/:approval_id/withdraw",
    { schema: { params: Params, body: WithdrawApprovalSchema, response: { 200: ApprovalViewSchema } } },
    async (req) => {
      const orgId = guard.client(req.principal);
      const result = await withdrawApproval(deps, {
        orgId,
        approvalId: req.params.approval_id,
        body: req.body,
        withdrawnBy: principalLabel(req.principal!),
      });
      observeWait(result);
      return result;
    },
  );
};
