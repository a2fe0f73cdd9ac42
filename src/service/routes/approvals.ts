/**
 * Approvals for reviewers: GET /v1/approvals, GET /v1/approvals/{approval_id},
 * POST /v1/approvals/{approval_id}/decision (spec: "Reviewer approves" / "Reviewer denies").
 */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { guard, principalLabel } from "../auth.js";
import {
  ApprovalStatus,
  DecideApprovalSchema,
  decideApproval,
  getApproval,
  listApprovals,
} from "../domain/approvals.js";

const Params = z.object({ approval_id: z.uuid() });

export const approvalRoutes: FastifyPluginAsyncZod = async (app) => {
  const tg = app.tg;

  app.get(
    "/v1/approvals",
    {
      schema: {
        querystring: z.object({
          status: z.enum(Object.values(ApprovalStatus) as [ApprovalStatus, ...ApprovalStatus[]]).optional(),
          limit: z.coerce.number().int().min(1).max(500).default(100),
        }),
      },
    },
    async (req) => {
      const { orgId } = guard.member(req.principal);
      return { approvals: await listApprovals(tg.db, orgId, req.query) };
    },
  );

  app.get("/v1/approvals/:approval_id", { schema: { params: Params } }, async (req) => {
    const { orgId } = guard.member(req.principal);
    return getApproval(tg.db, orgId, req.params.approval_id);
  });

  app.post(
    "/v1/approvals/:approval_id/decision",
    { schema: { params: Params, body: DecideApprovalSchema } },
    async (req) => {
      const orgId = guard.approver(req.principal);
      const result = await decideApproval(tg.db, {
        orgId,
        approvalId: req.params.approval_id,
        body: req.body,
        decidedBy: principalLabel(req.principal!),
        clock: tg.clock,
        keys: tg.keys,
      });
      const waited =
        (Date.parse(result.decided_at ?? result.requested_at) - Date.parse(result.requested_at)) / 1000;
      tg.metrics.approvalWait.observe({ status: result.status }, Math.max(0, waited));
      return result;
    },
  );
};
