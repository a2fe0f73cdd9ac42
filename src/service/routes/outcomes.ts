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
 * Binds `outcome` to an allowed event of an open chain, once. The chain row is locked so a
 * concurrent completion either sees the outcome or makes this call fail with 409.
 * @throws ApiError 404 / 409 as listed in the module comment.
 */
export async function recordOutcome(
  db: Database,
  opts: { orgId: string; chainId: string; eventId: string; outcome: EventOutcome },
): Promise<{ chain_id: string; event_id: string; outcome: EventOutcome }> {
  return db.tx(async (q) => {
    const chain = await getChain(q, opts.orgId, opts.chainId, true);
    if (chain.status === "completed" || chain.status === "failed") {
      throw conflict("TG_ERR_CHAIN_COMPLETED", "The chain is completed; outcomes can no longer be reported", {
        chain_id: chain.id,
        status: chain.status,
      });
    }
    const { rows } = await q.query<{ decision: { policy_decision: string }; outcome: EventOutcome | null }>(
      "SELECT decision, outcome FROM chain_events WHERE id = $1 AND chain_id = $2 FOR UPDATE",
      [opts.eventId, chain.id],
    );
    const event = rows[0];
    if (!event) throw notFound("Event");
    const decision = event.decision.policy_decision;
    if (decision !== "allow" && decision !== "allow_with_flag") {
      throw conflict(
        "TG_ERR_ACTION_NOT_ALLOWED",
        `The action was not allowed (${decision}); it has no outcome`,
        {
          event_id: opts.eventId,
          policy_decision: decision,
        },
      );
    }
    if (event.outcome !== null) {
      throw conflict("TG_ERR_OUTCOME_RECORDED", "An outcome was already reported for this event", {
        event_id: opts.eventId,
      });
    }
    await q.query("UPDATE chain_events SET outcome = $2 WHERE id = $1", [opts.eventId, opts.outcome]);
    return { chain_id: chain.id, event_id: opts.eventId, outcome: opts.outcome };
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
