/**
 * /dashboard/settings/team: approver teams and members of the viewer's organization; admins
 * save a team (unless an ApproverTeam resource manages it: 409) or a member, and are redirected
 * back with a notice.
 */

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { ApproverTeamSpecSchema, NameSchema } from "../../../contract/v1/admin.js";
import { ApiErrorCode } from "../../../contract/v1/errors.js";
import { conflict } from "../../errors.js";
import {
  listApproverTeams,
  listMembers,
  orgById,
  upsertApproverTeam,
  upsertMember,
} from "../../orgs/orgs.js";
import { type TeamRow, teamBody } from "../pages/team.js";
import { type DashboardDeps, parseFields, parseForm, requireAdmin, requireViewer } from "../request.js";
import { DoneQuerySchema, doneNotice, renderPage } from "./shared.js";

/** The team form: approvers one `email [admin|approver]` per line, fallback approvers one e-mail per line. */
const TeamFormSchema = z.object({
  name: NameSchema,
  approvers: z.string().max(20_000).default(""),
  fallback_approvers: z.string().max(20_000).default(""),
});

const MemberFormSchema = z.object({
  email: z.string().trim().toLowerCase().pipe(z.email()),
  display_name: z.string().trim().max(200).optional(),
  roles: z
    .union([z.string(), z.array(z.string())])
    .transform((r) => (Array.isArray(r) ? r : [r]))
    .pipe(z.array(z.enum(["member", "admin", "approver"])).min(1, "choose at least one role")),
});

/** The non-empty lines of a text area, trimmed. */
const lines = (text: string) =>
  text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);

/** Registers GET /dashboard/settings/team and POST …/teams and …/members. */
export function settingsTeamRoutes(app: FastifyInstance, deps: DashboardDeps): void {
  const { ctx } = deps;
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get("/dashboard/settings/team", { schema: { querystring: DoneQuerySchema } }, async (req, reply) => {
    const v = requireViewer(req);
    const org = await orgById(ctx.db, v.orgId);
    const teams = (await listApproverTeams(ctx.db, v.orgId)) as TeamRow[];
    const members = await listMembers(ctx.db, v.orgId);
    return renderPage(
      reply,
      deps,
      v,
      "Team",
      teamBody({ viewer: v, teams, members, timeoutHours: org.approval_timeout_hours }),
      { active: "team", notices: doneNotice(req.query) },
    );
  });

  r.post("/dashboard/settings/team/teams", async (req, reply) => {
    const v = requireAdmin(req);
    const form = parseForm(req, deps, v, TeamFormSchema);
    const existing = (await listApproverTeams(ctx.db, v.orgId)).find((t) => t.name === form.name);
    if (existing?.managed_by) {
      throw conflict(
        ApiErrorCode.MANAGED,
        `Team ${form.name} is managed by the ApproverTeam resource ${existing.managed_by}; edit the resource instead.`,
      );
    }
    const spec = parseFields(
      {
        approvers: lines(form.approvers).map((l) => {
          const [email, role] = l.split(/[\s,;]+/);
          return { email: email?.toLowerCase(), role: role === "admin" ? "admin" : "approver" };
        }),
        fallback_approvers: lines(form.fallback_approvers).map((l) => l.toLowerCase()),
      },
      ApproverTeamSpecSchema,
    );
    await upsertApproverTeam(ctx.db, v.orgSlug, form.name, spec, ctx.clock.nowMs());
    return reply.redirect("/dashboard/settings/team?done=team-saved", 303);
  });

  r.post("/dashboard/settings/team/members", async (req, reply) => {
    const v = requireAdmin(req);
    const form = parseForm(req, deps, v, MemberFormSchema);
    await upsertMember(
      ctx.db,
      v.orgSlug,
      form.email,
      { roles: [...new Set(form.roles)], ...(form.display_name && { display_name: form.display_name }) },
      ctx.clock.nowMs(),
    );
    return reply.redirect("/dashboard/settings/team?done=member-saved", 303);
  });
}
