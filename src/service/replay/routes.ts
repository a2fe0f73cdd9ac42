/**
 * Replay before enforce (issue 28): an organization admin replays a candidate policy over the
 * organization's recorded events of a window (replay.ts). Body and answer:
 * src/contract/v1/replay.ts. Reads only.
 * - POST /v1/policies/replay: the caller's own organization (admin user session or admin API key).
 * - POST /v1/admin/organizations/{slug}/policies/replay: the organization named in the path, for
 *   the service admin token (the operator, replaying a GovernancePolicy before enforcing it) or
 *   that organization's admin (another organization's slug is 404, as every admin route).
 */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { SlugSchema } from "../../contract/v1/admin.js";
import { ReplayRequestSchema, ReplayResponseSchema } from "../../contract/v1/replay.js";
import { guard } from "../auth.js";
import type { Database } from "../db/pool.js";
import { notFound, unauthorized } from "../errors.js";
import { orgBySlug } from "../orgs/orgs.js";
import { replayPolicy } from "./replay-policy.js";

/** What the replay routes use. */
export interface ReplayRouteDeps {
  db: Database;
}

/** The replay routes (see the module comment). 401 without credentials, 403 for a non-admin. */
export const replayRoutes: FastifyPluginAsyncZod<ReplayRouteDeps> = async (app, deps) => {
  const schema = { body: ReplayRequestSchema, response: { 200: ReplayResponseSchema } };
  app.post("/v1/policies/replay", { schema }, async (req) => {
    const orgId = guard.admin(req.principal);
    return replayPolicy(deps.db, { orgId, body: req.body });
  });

  app.post(
    "/v1/admin/organizations/:slug/policies/replay",
    { schema: { ...schema, params: z.object({ slug: SlugSchema }) } },
    async (req) => {
      if (!req.principal) throw unauthorized();
      const callerOrg = req.principal.kind === "service_admin" ? null : guard.admin(req.principal);
      const org = await orgBySlug(deps.db, req.params.slug);
      if (callerOrg !== null && callerOrg !== org.id) throw notFound("Organization");
      return replayPolicy(deps.db, { orgId: org.id, body: req.body });
    },
  );
};
