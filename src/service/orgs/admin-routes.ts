/**
 * The admin API the operator (and org admins) call. Idempotent PUTs keyed by name answer with a
 * content `version`; DELETEs are idempotent. The service admin token may act on every
 * organization; an organization admin only on its own (another organization's slug is 404).
 */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { createApiKey, type Principal, revokeApiKey, UserRole } from "../auth.js";
import {
  ApproverTeamSpecSchema,
  deleteApproverTeam,
  deleteOrganization,
  deletePolicy,
  listApproverTeams,
  listPolicies,
  NameSchema,
  OrganizationSpecSchema,
  orgBySlug,
  orgView,
  PolicySpecSchema,
  SlugSchema,
  setOrgToggle,
  upsertApproverTeam,
  upsertMember,
  upsertOrganization,
  upsertPolicy,
} from "./orgs.js";
import { forbidden, notFound, unauthorized } from "../errors.js";

const OrgParams = z.object({ slug: SlugSchema });
const NamedParams = z.object({ slug: SlugSchema, name: NameSchema });
const Toggle = z.object({ active: z.boolean(), reason: z.string().max(1000).nullable().optional() }).strict();

export const adminRoutes: FastifyPluginAsyncZod = async (app) => {
  const tg = app.tg;
  const now = () => tg.clock.nowMs();

  /** Service admin: any organization. Org admin: only its own; others look absent. */
  async function authorizeOrg(p: Principal | null, slug: string): Promise<void> {
    if (!p) throw unauthorized();
    if (p.kind === "service_admin") return;
    const isAdmin =
      (p.kind === "api_key" && p.role === "admin") || (p.kind === "user" && p.roles.includes("admin"));
    if (!isAdmin) throw forbidden("The admin role is required");
    const org = await orgBySlug(tg.db, slug).catch(() => null);
    if (!org || org.id !== p.orgId) throw notFound("Organization");
  }
  const serviceAdminOnly = (p: Principal | null) => {
    if (!p) throw unauthorized();
    if (p.kind !== "service_admin") throw forbidden("The service admin token is required");
  };

  app.put(
    "/v1/admin/organizations/:slug",
    { schema: { params: OrgParams, body: OrganizationSpecSchema } },
    async (req, reply) => {
      if (req.principal?.kind !== "service_admin") await authorizeOrg(req.principal, req.params.slug);
      const result = await upsertOrganization(tg.db, req.params.slug, req.body, now());
      return reply.code(result.created ? 201 : 200).send(result);
    },
  );

  app.get("/v1/admin/organizations/:slug", { schema: { params: OrgParams } }, async (req) => {
    await authorizeOrg(req.principal, req.params.slug);
    const org = await orgBySlug(tg.db, req.params.slug);
    return {
      ...orgView(org),
      policies: await listPolicies(tg.db, org.id),
      approver_teams: await listApproverTeams(tg.db, org.id),
      effective_config: (await tg.configs.get(tg.db, org)).config,
    };
  });

  app.delete("/v1/admin/organizations/:slug", { schema: { params: OrgParams } }, async (req) => {
    serviceAdminOnly(req.principal);
    return deleteOrganization(tg.db, req.params.slug);
  });

  for (const which of ["kill_switch", "pause"] as const) {
    const path = which === "kill_switch" ? "kill-switch" : "pause";
    app.post(
      `/v1/admin/organizations/:slug/${path}`,
      { schema: { params: OrgParams, body: Toggle } },
      async (req) => {
        await authorizeOrg(req.principal, req.params.slug);
        return setOrgToggle(tg.db, req.params.slug, which, req.body, now());
      },
    );
  }

  app.put(
    "/v1/admin/organizations/:slug/policies/:name",
    { schema: { params: NamedParams, body: PolicySpecSchema } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      return upsertPolicy(tg.db, req.params.slug, req.params.name, req.body, now());
    },
  );

  app.delete(
    "/v1/admin/organizations/:slug/policies/:name",
    { schema: { params: NamedParams } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      return deletePolicy(tg.db, req.params.slug, req.params.name, now());
    },
  );

  app.put(
    "/v1/admin/organizations/:slug/approver-teams/:name",
    { schema: { params: NamedParams, body: ApproverTeamSpecSchema } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      return upsertApproverTeam(tg.db, req.params.slug, req.params.name, req.body, now());
    },
  );

  app.delete(
    "/v1/admin/organizations/:slug/approver-teams/:name",
    { schema: { params: NamedParams } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      return deleteApproverTeam(tg.db, req.params.slug, req.params.name, now());
    },
  );

  app.put(
    "/v1/admin/organizations/:slug/members/:email",
    {
      schema: {
        params: z.object({ slug: SlugSchema, email: z.string().email() }),
        body: z
          .object({
            roles: z.array(z.enum(Object.values(UserRole) as [UserRole, ...UserRole[]])).min(1),
            display_name: z.string().max(200).optional(),
          })
          .strict(),
      },
    },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      return upsertMember(tg.db, req.params.slug, req.params.email, req.body, now());
    },
  );

  app.post(
    "/v1/admin/organizations/:slug/api-keys",
    {
      schema: {
        params: OrgParams,
        body: z
          .object({ name: z.string().min(1).max(200), role: z.enum(["client", "admin"]).default("client") })
          .strict(),
      },
    },
    async (req, reply) => {
      await authorizeOrg(req.principal, req.params.slug);
      const org = await orgBySlug(tg.db, req.params.slug);
      const key = await createApiKey(tg.db, {
        orgId: org.id,
        name: req.body.name,
        role: req.body.role,
        nowMs: now(),
      });
      return reply.code(201).send({ organization: org.slug, ...key });
    },
  );

  app.get("/v1/admin/organizations/:slug/api-keys", { schema: { params: OrgParams } }, async (req) => {
    await authorizeOrg(req.principal, req.params.slug);
    const org = await orgBySlug(tg.db, req.params.slug);
    const { rows } = await tg.db.query(
      "SELECT id, name, role, prefix, created_at, revoked_at FROM api_keys WHERE org_id = $1 ORDER BY created_at",
      [org.id],
    );
    return {
      api_keys: rows.map((r) => ({
        key_id: r.id,
        name: r.name,
        role: r.role,
        prefix: r.prefix,
        created_at: new Date(r.created_at).toISOString(),
        revoked_at: r.revoked_at ? new Date(r.revoked_at).toISOString() : null,
      })),
    };
  });

  app.post(
    "/v1/admin/organizations/:slug/api-keys/:key_id/revoke",
    { schema: { params: z.object({ slug: SlugSchema, key_id: z.uuid() }) } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      const org = await orgBySlug(tg.db, req.params.slug);
      const revoked = await revokeApiKey(tg.db, tg.apiKeys, {
        orgId: org.id,
        keyId: req.params.key_id,
        nowMs: now(),
      });
      if (!revoked) throw notFound("API key");
      return { key_id: req.params.key_id, revoked: true };
    },
  );
};
