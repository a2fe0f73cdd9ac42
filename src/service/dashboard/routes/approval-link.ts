/**
 * GET /dashboard/approvals/{approval_id}/link: a signed approval link from a mail (notify/links.ts).
 * It is checked (signature, expiry, not used) before sign-in, then for the signed-in recipient
 * consumed once and turned into a preselected decision on the approvals page (303). Every
 * refusal is a page saying why: 400 malformed, 403 altered or someone else's, 404 no such
 * approval, 409 used or already decided, 410 expired.
 */
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { getApproval } from "../../approvals/views.js";
import {
  ApprovalLinkQuerySchema,
  approvalLinkUsed,
  checkApprovalLink,
  consumeApprovalLink,
  linkFromQuery,
} from "../../notify/links.js";
import { messageBody } from "../pages/message.js";
import type { DashboardDeps } from "../request.js";
import { renderPage, Uuid } from "./shared.js";

const LinkParamsSchema = z.object({ approval_id: Uuid });

const usedText = "Each approval link works once. Open the approvals page to decide.";

/** Registers GET /dashboard/approvals/{approval_id}/link. */
export function approvalLinkRoutes(app: FastifyInstance, deps: DashboardDeps): void {
  const { ctx } = deps;
  app.withTypeProvider<ZodTypeProvider>().get(
    "/dashboard/approvals/:approval_id/link",
    // A malformed link gets its own page below, not the generic 400.
    { schema: { params: LinkParamsSchema, querystring: ApprovalLinkQuerySchema }, attachValidation: true },
    async (req, reply) => {
      const refuse = (status: number, title: string, text: string) =>
        renderPage(
          reply,
          deps,
          req.viewer,
          title,
          messageBody({
            title,
            text,
            tone: "bad",
            actions: [{ href: "/dashboard/approvals", label: "Open pending approvals", primary: true }],
          }),
          { status },
        );
      if (req.validationError)
        return refuse(400, "Invalid link", "This approval link is incomplete or malformed.");
      const link = linkFromQuery(req.params.approval_id, req.query);
      const refusal = checkApprovalLink(ctx.linkKey, link, req.query.sig, ctx.clock.nowMs());
      if (refusal === "invalid")
        return refuse(
          403,
          "Invalid link",
          "This approval link is not valid: it was altered or not issued by Tollgate.",
        );
      if (refusal === "expired")
        return refuse(410, "Link expired", "This approval link expired together with its approval.");
      if (await approvalLinkUsed(ctx.db, link)) return refuse(409, "Link already used", usedText);
      const v = req.viewer;
      if (!v) return reply.redirect(`/auth/login?return_to=${encodeURIComponent(req.url)}`, 303);
      if (v.email !== link.recipient) {
        return refuse(
          403,
          "Link for someone else",
          `This link was sent to another person. You are signed in as ${v.email}.`,
        );
      }
      const approval = await getApproval(ctx.db, v.orgId, link.approvalId).catch(() => null);
      if (!approval) return refuse(404, "Not found", "This approval does not exist in your organization.");
      if (approval.status !== "pending") {
        return refuse(
          409,
          "Already decided",
          `This approval is already ${approval.status.replace("_", " ")}.`,
        );
      }
      if (!v.canDecide) return refuse(403, "Not allowed", "Only approvers and admins can decide approvals.");
      if (!(await consumeApprovalLink(ctx.db, link, v.email, ctx.clock.nowMs()))) {
        return refuse(409, "Link already used", usedText);
      }
      return reply.redirect(
        `/dashboard/approvals?approval=${link.approvalId}&decision=${link.decision}&from=link#approval-${link.approvalId}`,
        303,
      );
    },
  );
}
