/**
 * /dashboard/admin/api-keys (admins): the organization's API keys; creating one answers with
 * the page showing the new key once (never cached), revoking one redirects back with a notice.
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { createApiKey, listApiKeys, revokeApiKey } from "../../auth.js";
import { notFound } from "../../errors.js";
import type { Notice, Viewer } from "../layout.js";
import { apiKeysBody } from "../pages/admin.js";
import { type DashboardDeps, parseForm, requireAdmin } from "../request.js";
import { checkFirst, DoneQuerySchema, doneNotice, invalidField, renderPage, Uuid } from "./shared.js";

const KeyFormSchema = z.object({
  name: z.string().trim().min(1).max(200),
  role: z.enum(["client", "admin"]),
});

/** Registers GET and POST /dashboard/admin/api-keys and POST …/{key_id}/revoke. */
export function adminApiKeyRoutes(app: FastifyInstance, deps: DashboardDeps): void {
  const { ctx } = deps;
  const r = app.withTypeProvider<ZodTypeProvider>();

  /** The API keys page; `created` is the key just created (shown once). */
  async function apiKeysPage(
    reply: FastifyReply,
    v: Viewer,
    notices: Notice[],
    created?: { name: string; apiKey: string },
  ) {
    // Newest first: the admin API lists them oldest first.
    const keys = await listApiKeys(ctx.db, v.orgId, "newest");
    return renderPage(reply, deps, v, "API keys", apiKeysBody({ viewer: v, keys, created }), {
      active: "api-keys",
      notices,
    });
  }

  r.get("/dashboard/admin/api-keys", { schema: { querystring: DoneQuerySchema } }, (req, reply) =>
    apiKeysPage(reply, requireAdmin(req), doneNotice(req.query)),
  );

  r.post("/dashboard/admin/api-keys", async (req, reply) => {
    const v = requireAdmin(req);
    const form = parseForm(req, deps, v, KeyFormSchema);
    const key = await createApiKey(ctx.db, {
      orgId: v.orgId,
      name: form.name,
      role: form.role,
      nowMs: ctx.clock.nowMs(),
    });
    ctx.log.info({ key_id: key.key_id, role: key.role, by: v.email }, "API key created in the dashboard");
    return apiKeysPage(reply, v, [], { name: form.name, apiKey: key.api_key });
  });

  r.post(
    "/dashboard/admin/api-keys/:key_id/revoke",
    {
      ...checkFirst(requireAdmin),
      schema: { params: z.object({ key_id: Uuid }) },
      schemaErrorFormatter: invalidField,
    },
    async (req, reply) => {
      const v = requireAdmin(req);
      parseForm(req, deps, v, z.object({}));
      const revoked = await revokeApiKey(ctx.db, ctx.apiKeys, {
        orgId: v.orgId,
        keyId: req.params.key_id,
        nowMs: ctx.clock.nowMs(),
      });
      if (!revoked) throw notFound("API key");
      return reply.redirect("/dashboard/admin/api-keys?done=key-revoked", 303);
    },
  );
}
