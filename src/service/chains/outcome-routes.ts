/** Routes of outcome reports: see outcomes.ts for the contract of each. */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import {
  OutcomeBatchResponseSchema,
  OutcomeBatchSchema,
  OutcomeResponseSchema,
} from "../../contract/v1/chains.js";
import { EventOutcomeSchema } from "../../contract/v1/wire.js";
import { guard } from "../auth.js";
import type { Database } from "../db/pool.js";
import { recordOutcome, recordOutcomes } from "./outcomes.js";

const Params = z.object({ chain_id: z.uuid(), event_id: z.uuid() });

/** POST /v1/chains/{chain_id}/events/{event_id}/outcome and POST /v1/outcomes. */
export const outcomeRoutes: FastifyPluginAsyncZod<{ db: Database }> = async (app, deps) => {
  app.post(
    "/v1/chains/:chain_id/events/:event_id/outcome",
    { schema: { params: Params, body: EventOutcomeSchema, response: { 200: OutcomeResponseSchema } } },
    async (req) => {
      const orgId = guard.client(req.principal);
      return recordOutcome(deps.db, {
        orgId,
        chainId: req.params.chain_id,
        eventId: req.params.event_id,
        outcome: req.body,
      });
    },
  );
  app.post(
    "/v1/outcomes",
    { schema: { body: OutcomeBatchSchema, response: { 200: OutcomeBatchResponseSchema } } },
    async (req) => {
      const orgId = guard.client(req.principal);
      return { results: await recordOutcomes(deps.db, orgId, req.body.outcomes) };
    },
  );
};
