/**
 * Outcomes, not just attempts: after carrying out an allowed action, a client (the sidecar)
 * reports what happened, and the service binds it to the event so that the receipt's
 * events_summary shows it (`outcome`, receipts/schema.ts EventOutcomeSchema).
 *
 * POST /v1/chains/{chain_id}/events/{event_id}/outcome (client API key)
 *   body   { status: "success"|"error", error_class: string|null, duration_ms: number ≥ 0,
 *            result_sha256: 64 lowercase hex|null }
 *   200    { chain_id, event_id, outcome }
 *   404    TG_ERR_NOT_FOUND (chain or event unknown, or another organization's)
 *   409    TG_ERR_CHAIN_COMPLETED (the chain is sealed; its receipt cannot change),
 *          TG_ERR_ACTION_NOT_ALLOWED (the event's decision is not allow / allow_with_flag, so the
 *          action was never carried out), TG_ERR_OUTCOME_RECORDED (reported once only).
 */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { type EventOutcome, EventOutcomeSchema } from "../../receipts/schema.js";
import { guard } from "../auth.js";
import type { Database } from "../db/pool.js";
import { getChain } from "../domain/chains.js";
import { conflict, notFound } from "../errors.js";

const Params = z.object({ chain_id: z.uuid(), event_id: z.uuid() });

/**
 * Binds `outcome` to an allowed event of an open chain, once. One statement on the hot path:
 * the chain row is held with FOR KEY SHARE only for that statement, so it never queues behind
 * or holds up the next action's recording for long, while a concurrent completion (FOR UPDATE)
 * either sees the outcome in the receipt or makes this report fail with 409. When nothing was
 * updated, a second read says why.
 * @throws ApiError 404 / 409 as listed in the module comment.
 */
export async function recordOutcome(
  db: Database,
  opts: { orgId: string; chainId: string; eventId: string; outcome: EventOutcome },
): Promise<{ chain_id: string; event_id: string; outcome: EventOutcome }> {
  const { rowCount } = await db.query(
    `UPDATE chain_events SET outcome = $4
     WHERE id = $3 AND chain_id = $1 AND outcome IS NULL
       AND decision->>'policy_decision' IN ('allow', 'allow_with_flag')
       AND EXISTS (SELECT 1 FROM chains WHERE id = $1 AND org_id = $2 AND status NOT IN ('completed', 'failed') FOR KEY SHARE)`,
    [opts.chainId, opts.orgId, opts.eventId, opts.outcome],
  );
  if (rowCount !== 1) await explainRefusal(db, opts);
  return { chain_id: opts.chainId, event_id: opts.eventId, outcome: opts.outcome };
}

/** Throws the reason an outcome report changed nothing. */
async function explainRefusal(
  db: Database,
  opts: { orgId: string; chainId: string; eventId: string },
): Promise<never> {
  const chain = await getChain(db, opts.orgId, opts.chainId);
  if (chain.status === "completed" || chain.status === "failed") {
    throw conflict("TG_ERR_CHAIN_COMPLETED", "The chain is completed; outcomes can no longer be reported", {
      chain_id: chain.id,
      status: chain.status,
    });
  }
  const { rows } = await db.query<{ decision: { policy_decision: string }; outcome: EventOutcome | null }>(
    "SELECT decision, outcome FROM chain_events WHERE id = $1 AND chain_id = $2",
    [opts.eventId, chain.id],
  );
  const event = rows[0];
  if (!event) throw notFound("Event");
  if (event.outcome !== null) {
    throw conflict("TG_ERR_OUTCOME_RECORDED", "An outcome was already reported for this event", {
      event_id: opts.eventId,
    });
  }
  const decision = event.decision.policy_decision;
  throw conflict("TG_ERR_ACTION_NOT_ALLOWED", `The action was not allowed (${decision}); it has no outcome`, {
    event_id: opts.eventId,
    policy_decision: decision,
  });
}

export const outcomeRoutes: FastifyPluginAsyncZod = async (app) => {
  const tg = app.tg;
  app.post(
    "/v1/chains/:chain_id/events/:event_id/outcome",
    { schema: { params: Params, body: EventOutcomeSchema } },
    async (req) => {
      const orgId = guard.client(req.principal);
      return recordOutcome(tg.db, {
        orgId,
        chainId: req.params.chain_id,
        eventId: req.params.event_id,
        outcome: req.body,
      });
    },
  );
};
