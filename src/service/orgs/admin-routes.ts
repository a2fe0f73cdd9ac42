/**
 * The admin API the operator (and org admins) call. Idempotent PUTs keyed by name answer with a
 * content `version`; DELETEs are idempotent. The service admin token may act on every
 * organization; an organization admin only on its own (another organization's slug is 404).
 */

import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  ApproverTeamSpecSchema,
  NameSchema,
  OrganizationSpecSchema,
  PolicySpecSchema,
  SlugSchema,
} from "../../contract/v1/admin.js";
import {
  ApiKeyCreatedSchema,
  ApiKeyListSchema,
  ApiKeyRevokedSchema,
  DeletedSchema,
  MemberWriteSchema,
  NamedWriteSchema,
  OrganizationDetailSchema,
  OrganizationUpsertSchema,
  OrganizationViewSchema,
  PolicyWriteSchema,
} from "../../contract/v1/responses.js";
import {
  type ApiKeyCache,
  createApiKey,
  listApiKeys,
  type Principal,
  revokeApiKey,
  UserRole,
} from "../auth.js";
import type { Clock } from "../clock.js";
import type { Database } from "../db/pool.js";
import { forbidden, notFound, unauthorized } from "../errors.js";
import {
  deleteApproverTeam,
  deleteOrganization,
  deletePolicy,
  listApproverTeams,
  listPolicies,
  type OrgConfigCache,
  orgBySlug,
  orgView,
  setOrgToggle,
  upsertApproverTeam,
  upsertMember,
  upsertOrganization,
  upsertPolicy,
} from "./orgs.js";

const OrgParams = z.object({ slug: SlugSchema });
const NamedParams = z.object({ slug: SlugSchema, name: NameSchema });
const Toggle = z.object({ active: z.boolean(), reason: z.string().max(1000).nullable().optional() }).strict();

/**
 * Admin of an organization: the service admin token acts on any; an organization admin (admin
 * API key or session) only on its own, and another organization looks absent.
 * @throws ApiError 401 without a principal, 403 without the admin role, 404 another organization
 */
export async function authorizeOrgAdmin(db: Database, p: Principal | null, slug: string): Promise<void> {
  if (!p) throw unauthorized();
  if (p.kind === "service_admin") return;
  const isAdmin =
    (p.kind === "api_key" && p.role === "admin") || (p.kind === "user" && p.roles.includes("admin"));
  if (!isAdmin) throw forbidden("The admin role is required");
  const org = await orgBySlug(db, slug).catch(() => null);
  if (!org || org.id !== p.orgId) throw notFound("Organization");
}

/**
 * The service admin token only (service-wide operations).
 * @throws ApiError 401 without a principal, 403 for any other principal
 */
export function requireServiceAdmin(p: Principal | null): void {
  if (!p) throw unauthorized();
  if (p.kind !== "service_admin") throw forbidden("The service admin token is required");
}

/** What the admin routes use. */
export interface AdminRouteDeps {
  db: Database;
  clock: Clock;
  configs: OrgConfigCache;
  apiKeys: ApiKeyCache;
}

/** The admin API (README "Admin API"): organizations, policies, approver teams, members, API keys. */
export const adminRoutes: FastifyPluginAsyncZod<AdminRouteDeps> = async (app, deps) => {
  const now = () => deps.clock.nowMs();

  const authorizeOrg = (p: Principal | null, slug: string) => authorizeOrgAdmin(deps.db, p, slug);

  app.put(
    "/v1/admin/organizations/:slug",
    {
      schema: {
        params: OrgParams,
        body: OrganizationSpecSchema,
        response: { 200: OrganizationUpsertSchema, 201: OrganizationUpsertSchema },
      },
    },
    async (req, reply) => {
      if (req.principal?.kind !== "service_admin") await authorizeOrg(req.principal, req.params.slug);
      const result = await upsertOrganization(deps.db, req.params.slug, req.body, now());
      return reply.code(result.created ? 201 : 200).send(result);
    },
  );

  app.get(
    "/v1/admin/organizations/:slug",
    { schema: { params: OrgParams, response: { 200: OrganizationDetailSchema } } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      const org = await orgBySlug(deps.db, req.params.slug);
      return {
        ...orgView(org),
        policies: await listPolicies(deps.db, org.id),
        approver_teams: await listApproverTeams(deps.db, org.id),
        effective_config: (await deps.configs.get(deps.db, org)).config,
      };
    },
  );

  app.delete(
    "/v1/admin/organizations/:slug",
    { schema: { params: OrgParams, response: { 200: DeletedSchema } } },
    async (req) => {
      requireServiceAdmin(req.principal);
      return deleteOrganization(deps.db, req.params.slug);
    },
  );

  for (const which of ["kill_switch", "pause"] as const) {
    const path = which === "kill_switch" ? "kill-switch" : "pause";
    app.post(
      `/v1/admin/organizations/:slug/${path}`,
      { schema: { params: OrgParams, body: Toggle, response: { 200: OrganizationViewSchema } } },
      async (req) => {
        await authorizeOrg(req.principal, req.params.slug);
        return setOrgToggle(deps.db, req.params.slug, which, req.body, now());
      },
    );
  }

  app.put(
    "/v1/admin/organizations/:slug/policies/:name",
    { schema: { params: NamedParams, body: PolicySpecSchema, response: { 200: PolicyWriteSchema } } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      return upsertPolicy(deps.db, req.params.slug, req.params.name, req.body, now());
    },
  );

  app.delete(
    "/v1/admin/organizations/:slug/policies/:name",
    { schema: { params: NamedParams, response: { 200: DeletedSchema } } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      return deletePolicy(deps.db, req.params.slug, req.params.name, now());
    },
  );

  app.put(
    "/v1/admin/organizations/:slug/approver-teams/:name",
    { schema: { params: NamedParams, body: ApproverTeamSpecSchema, response: { 200: NamedWriteSchema } } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      return upsertApproverTeam(deps.db, req.params.slug, req.params.name, req.body, now());
    },
  );

  app.delete(
    "/v1/admin/organizations/:slug/approver-teams/:name",
    { schema: { params: NamedParams, response: { 200: DeletedSchema } } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      return deleteApproverTeam(deps.db, req.params.slug, req.params.name, now());
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
        response: { 200: MemberWriteSchema },
      },
    },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      return upsertMember(deps.db, req.params.slug, req.params.email, req.body, now());
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
        response: { 201: ApiKeyCreatedSchema },
      },
    },
    async (req, reply) => {
      await authorizeOrg(req.principal, req.params.slug);
      const org = await orgBySlug(deps.db, req.params.slug);
      const key = await createApiKey(deps.db, {
        orgId: org.id,
        name: req.body.name,
        role: req.body.role,
        nowMs: now(),
      });
      return reply.code(201).send({ organization: org.slug, ...key });
    },
  );

  app.get(
    "/v1/admin/organizations/:slug/api-keys",
    { schema: { params: OrgParams, response: { 200: ApiKeyListSchema } } },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      const org = await orgBySlug(deps.db, req.params.slug);
      return { api_keys: await listApiKeys(deps.db, org.id) };
    },
  );

  app.post(
    "/v1/admin/organizations/:slug/api-keys/:key_id/revoke",
    {
      schema: {
        params: z.object({ slug: SlugSchema, key_id: z.uuid() }),
        response: { 200: ApiKeyRevokedSchema },
      },
    },
    async (req) => {
      await authorizeOrg(req.principal, req.params.slug);
      const org = await orgBySlug(deps.db, req.params.slug);
      const revoked = await revokeApiKey(deps.db, deps.apiKeys, {
        orgId: org.id,
        keyId: req.params.key_id,
        nowMs: now(),
      });
      if (!revoked) throw notFound("API key");
      return { key_id: req.params.key_id, revoked: true as const };
    },
  );
};
