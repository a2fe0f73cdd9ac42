/**
 * /dashboard/approvals: the pending approvals with their decision forms and the latest decided
 * ones; POST /dashboard/approvals/{approval_id}/decision decides one (spec: "Reviewer approves"
 * / "Reviewer denies"), optionally granting a time-boxed exception, and redirects back with
 * `?decided=`. A refused decision (an exception with a denial, already decided) answers with
 * the page itself and a notice, status 400 or 409.
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { DecideApproval } from "../../../contract/v1/approvals.js";
import { ExceptionDurationSchema } from "../../../contract/v1/wire.js";
import { decideApproval } from "../../approvals/decide.js";
import { getApproval, listApprovals } from "../../approvals/views.js";
import { ApiError } from "../../errors.js";
import { durationLabels, formatTime } from "../format.js";
import type { Notice, Viewer } from "../layout.js";
import { approvalsBody, type Preselect } from "../pages/approvals.js";
import { type DashboardDeps, parseFields, parseForm, requireDecider, requireViewer } from "../request.js";
import { checkFirst, invalidField, renderPage, Uuid } from "./shared.js";

/** Query of the approvals page: a preselected decision (from a mail link) and the decision just made. */
const ApprovalsQuerySchema = z.object({
  approval: Uuid.optional().catch(undefined),
  decision: z.enum(["approve", "deny"]).optional().catch(undefined),
  from: z.string().optional(),
  decided: Uuid.optional().catch(undefined),
});
type ApprovalsQuery = z.infer<typeof ApprovalsQuerySchema>;

const ApprovalParamsSchema = z.object({ approval_id: Uuid });

const DecisionFormSchema = z.object({
  decision: z.enum(["approve", "deny"], { message: "choose approve or deny" }),
  notes: z.string().max(2000).optional(),
  exception: z.literal("on").optional(),
  exception_duration: ExceptionDurationSchema.optional(),
});

/** Registers GET /dashboard/approvals and POST /dashboard/approvals/{approval_id}/decision. */
export function approvalsRoutes(app: FastifyInstance, deps: DashboardDeps): void {
  const { ctx } = deps;
  const r = app.withTypeProvider<ZodTypeProvider>();

  /** The approvals page for `v`, with `extra` notices above the ones `query` asks for. */
  async function approvalsPage(
    reply: FastifyReply,
    v: Viewer,
    query: ApprovalsQuery,
    extra: { notices?: Notice[]; status?: number } = {},
  ) {
    const pending = await listApprovals(ctx.db, v.orgId, { status: "pending", limit: 200 });
    const recent = (await listApprovals(ctx.db, v.orgId, { limit: 60 }))
      .filter((a) => a.status !== "pending")
      .slice(0, 15);
    const preselect: Preselect | null =
      query.approval && query.decision
        ? { approvalId: query.approval, decision: query.decision, fromLink: query.from === "link" }
        : null;
    const notices: Notice[] = [...(extra.notices ?? [])];
    if (query.decided) {
      const a = await getApproval(ctx.db, v.orgId, query.decided).catch(() => null);
      if (a && a.status !== "pending") {
        const exc = a.exception
          ? ` A ${durationLabels[a.exception.duration as keyof typeof durationLabels]} exception is active until ${formatTime(a.exception.expires_at)}.`
          : "";
        notices.push({
          kind: "ok",
          text: `Decision recorded: ${a.status}.${exc} The waiting agent has been released.`,
        });
      }
    }
    if (preselect && !pending.some((a) => a.approval_id === preselect.approvalId)) {
      notices.push({ kind: "warn", text: "That approval is no longer pending." });
    }
    return renderPage(
      reply,
      deps,
      v,
      "Approvals",
      approvalsBody({ viewer: v, pending, recent, nowMs: ctx.clock.nowMs(), preselect }),
      { active: "approvals", notices, status: extra.status },
    );
  }

  r.get(
    "/dashboard/approvals",
    {
      ...checkFirst(requireViewer),
      schema: { querystring: ApprovalsQuerySchema },
      schemaErrorFormatter: invalidField,
    },
    (req, reply) => approvalsPage(reply, requireViewer(req), req.query),
  );

  r.post(
    "/dashboard/approvals/:approval_id/decision",
    {
      ...checkFirst(requireDecider),
      schema: { params: ApprovalParamsSchema },
      schemaErrorFormatter: invalidField,
    },
    async (req, reply) => {
      const v = requireDecider(req);
      const { approval_id: approvalId } = req.params;
      const form = parseForm(req, deps, v, DecisionFormSchema);
      // A refusal shows the approvals page again, as the query of this URL asks for it.
      const refuse = (status: number, text: string) =>
        approvalsPage(reply, v, parseFields(req.query ?? {}, ApprovalsQuerySchema), {
          status,
          notices: [{ kind: "bad", text }],
        });
      if (form.exception && form.decision === "deny") {
        return refuse(400, "A time-boxed exception can only be granted when approving. Uncheck it to deny.");
      }
      const body: DecideApproval = {
        decision: form.decision,
        ...(form.notes?.trim() && { notes: form.notes.trim() }),
        ...(form.exception && { exception_duration: form.exception_duration ?? "1d" }),
      };
      try {
        const result = await decideApproval(ctx, { orgId: v.orgId, approvalId, body, decidedBy: v.email });
        const waited =
          (Date.parse(result.decided_at ?? result.requested_at) - Date.parse(result.requested_at)) / 1000;
        ctx.metrics.approvalWait.observe({ status: result.status }, Math.max(0, waited));
      } catch (err) {
        if (err instanceof ApiError && err.statusCode === 409) return refuse(409, err.message);
        throw err;
      }
      return reply.redirect(`/dashboard/approvals?decided=${approvalId}`, 303);
    },
  );
}
