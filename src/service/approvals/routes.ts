/**
 * Approvals for reviewers: GET /v1/approvals, GET /v1/approvals/{approval_id},
 * POST /v1/approvals/{approval_id}/decision (spec: "Reviewer approves" / "Reviewer denies");
 * for the caller that waits: POST /v1/approvals/{approval_id}/withdraw (beyond the spec).
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
  WithdrawApprovalSchema,
  withdrawApproval,
} from "./decide.js";

const Params = z.object({ approval_id: z.uuid() });

export const approvalRoutes: FastifyPluginAsyncZod = async (app) => {
  const tg = app.tg;
  /** tollgate_approval_wait_seconds: request to resolution of an approval just resolved. */
  const observeWait = (a: { status: string; requested_at: string; decided_at: string | null }) =>
    tg.metrics.approvalWait.observe(
      { status: a.status },
      Math.max(0, (Date.parse(a.decided_at ?? a.requested_at) - Date.parse(a.requested_at)) / 1000),
    );

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
      observeWait(result);
      return result;
    },
  );

  app.post(
    "/v1/approvals/:approval_id/withdraw",
    { schema: { params: Params, body: WithdrawApprovalSchema } },
    async (req) => {
      const orgId = guard.client(req.principal);
      const result = await withdrawApproval(tg.db, {
        orgId,
        approvalId: req.params.approval_id,
        body: req.body,
        withdrawnBy: principalLabel(req.principal!),
        clock: tg.clock,
        keys: tg.keys,
      });
      observeWait(result);
      return result;
    },
  );
};
