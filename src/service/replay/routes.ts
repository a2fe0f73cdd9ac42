/**
 * POST /v1/policies/replay (issue 28, "Replay before enforce"): an organization admin replays a
 * candidate policy over the organization's recorded events of a window (replay.ts). Body and
 * answer: src/contract/v1/replay.ts. Reads only.
 */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { ReplayRequestSchema, ReplayResponseSchema } from "../../contract/v1/replay.js";
import { guard } from "../auth.js";
import type { Database } from "../db/pool.js";
import { replayPolicy } from "./replay.js";

/** What the replay route uses. */
export interface ReplayRouteDeps {
  db: Database;
}

/** The replay route (see the module comment). 401 without credentials, 403 for a non-admin. */
export const replayRoutes: FastifyPluginAsyncZod<ReplayRouteDeps> = async (app, deps) => {
  app.post(
    "/v1/policies/replay",
    { schema: { body: ReplayRequestSchema, response: { 200: ReplayResponseSchema } } },
    async (req) => {
      const orgId = guard.admin(req.principal);
      return replayPolicy(deps.db, { orgId, body: req.body });
    },
  );
};
