/**
 * /dashboard/admin/organization (admins): the organization's kill switch and pause, each
 * switched on or off by a form that redirects back with a notice.
 */
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { orgById, setOrgToggle } from "../../orgs/orgs.js";
import { organizationBody } from "../pages/admin.js";
import { type DashboardDeps, parseForm, requireAdmin } from "../request.js";
import { DoneQuerySchema, doneNotice, renderPage } from "./shared.js";

const ToggleFormSchema = z.object({
  active: z.enum(["true", "false"]).transform((v) => v === "true"),
  reason: z.string().trim().max(1000).optional(),
});

/** Registers GET /dashboard/admin/organization and POST …/kill-switch and …/pause. */
export function adminOrganizationRoutes(app: FastifyInstance, deps: DashboardDeps): void {
  const { ctx } = deps;
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get("/dashboard/admin/organization", { schema: { querystring: DoneQuerySchema } }, async (req, reply) => {
    const v = requireAdmin(req);
    const org = await orgById(ctx.db, v.orgId);
    return renderPage(
      reply,
      deps,
      v,
      "Kill switch and pause",
      organizationBody({
        viewer: v,
        killSwitch: { active: org.kill_switch_active, reason: org.kill_switch_reason },
        pause: { active: org.paused, reason: org.pause_reason },
        managedBy: org.managed_by,
      }),
      { active: "organization", notices: doneNotice(req.query) },
    );
  });

  for (const which of ["kill-switch", "pause"] as const) {
    r.post(`/dashboard/admin/organization/${which}`, async (req, reply) => {
      const v = requireAdmin(req);
      const form = parseForm(req, deps, v, ToggleFormSchema);
      await setOrgToggle(
        ctx.db,
        v.orgSlug,
        which === "kill-switch" ? "kill_switch" : "pause",
        { active: form.active, reason: form.reason || null },
        ctx.clock.nowMs(),
      );
      ctx.log.warn(
        { organization: v.orgSlug, toggle: which, active: form.active, by: v.email },
        "organization toggle changed",
      );
      return reply.redirect(`/dashboard/admin/organization?done=${which}-${form.active ? "on" : "off"}`, 303);
    });
  }
}
