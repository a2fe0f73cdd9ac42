/**
 * Outcomes, not just attempts (the logic; the routes are outcome-routes.ts, the SQL store.ts): after carrying out an allowed action, a client (the sidecar)
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
 *
 * POST /v1/outcomes (client API key): many outcomes in one request, one statement (a sidecar
 * under load reports its calls' outcomes in batches instead of one request per call)
 *   body   { outcomes: [{ chain_id, event_id, outcome }] } (1..500 items; outcome as above)
 *   200    { results: [{ chain_id, event_id, recorded: true, error: null }
 *                      | { chain_id, event_id, recorded: false, error: { code, message } }] }
 *          in request order; `error.code` is what the single route would have answered
 *          (TG_ERR_NOT_FOUND, TG_ERR_CHAIN_COMPLETED, TG_ERR_ACTION_NOT_ALLOWED,
 *          TG_ERR_OUTCOME_RECORDED). An item refused does not refuse the others.
 */

import type { OutcomeReportResultSchema, OutcomeResponseSchema, WireOf } from "../../contract/v1/chains.js";
import { ApiErrorCode } from "../../contract/v1/errors.js";
import type { EventOutcome } from "../../contract/v1/wire.js";
import type { Database } from "../db/pool.js";
import { ApiError, conflict, notFound } from "../errors.js";
import { bindOutcomes, eventOutcomeState, getChain } from "./store.js";

/** One item's result in POST /v1/outcomes. */
export type BatchResult = WireOf<typeof OutcomeReportResultSchema>;

/**
 * Binds `outcome` to an allowed event of an open chain, once (store.ts bindOutcomes, a batch
 * of one). One statement on the hot path:
 * the chain row is held with FOR KEY SHARE only for that statement, so it never queues behind
 * or holds up the next action's recording for long, while a concurrent completion (FOR UPDATE)
 * either sees the outcome in the receipt or makes this report fail with 409. When nothing was
 * updated, a second read says why.
 * @throws ApiError 404 / 409 as listed in the module comment.
 */
export async function recordOutcome(
  db: Database,
  opts: { orgId: string; chainId: string; eventId: string; outcome: EventOutcome },
): Promise<WireOf<typeof OutcomeResponseSchema>> {
  const bound = await bindOutcomes(db, opts.orgId, [
    { chain_id: opts.chainId, event_id: opts.eventId, outcome: opts.outcome },
  ]);
  if (!bound.has(opts.eventId)) await explainRefusal(db, opts);
  return { chain_id: opts.chainId, event_id: opts.eventId, outcome: opts.outcome };
}

/**
 * Binds many outcomes in one statement, each under the same conditions as recordOutcome; the
 * items it could not bind are explained one by one (the rare path).
 * @returns one result per item, in order.
 */
export async function recordOutcomes(
  db: Database,
  orgId: string,
  items: readonly { chain_id: string; event_id: string; outcome: EventOutcome }[],
): Promise<BatchResult[]> {
  // Each event once in the statement (an UPDATE binds a row from one arbitrary duplicate); a
  // repeated event is explained below like any refused item.
  const seen = new Set<string>();
  const unique = items.filter((i) => !seen.has(i.event_id) && seen.add(i.event_id));
  const bound = await bindOutcomes(db, orgId, unique);
  const results: BatchResult[] = [];
  for (const item of items) {
    const result = { chain_id: item.chain_id, event_id: item.event_id };
    if (bound.delete(item.event_id)) {
      results.push({ ...result, recorded: true, error: null });
      continue;
    }
    try {
      await explainRefusal(db, { orgId, chainId: item.chain_id, eventId: item.event_id });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      results.push({ ...result, recorded: false, error: { code: err.code, message: err.message } });
    }
  }
  return results;
}

/** Throws the reason an outcome report changed nothing. */
async function explainRefusal(
  db: Database,
  opts: { orgId: string; chainId: string; eventId: string },
): Promise<never> {
  const chain = await getChain(db, opts.orgId, opts.chainId);
  if (chain.status === "completed" || chain.status === "failed") {
    throw conflict(
      ApiErrorCode.CHAIN_COMPLETED,
      "The chain is completed; outcomes can no longer be reported",
      {
        chain_id: chain.id,
        status: chain.status,
      },
    );
  }
  const event = await eventOutcomeState(db, chain.id, opts.eventId);
  if (!event) throw notFound("Event");
  if (event.outcome !== null) {
    throw conflict(ApiErrorCode.OUTCOME_RECORDED, "An outcome was already reported for this event", {
      event_id: opts.eventId,
    });
  }
  const decision = event.decision.policy_decision;
  throw conflict(
    ApiErrorCode.ACTION_NOT_ALLOWED,
    `The action was not allowed (${decision}); it has no outcome`,
    {
      event_id: opts.eventId,
      policy_decision: decision,
    },
  );
}
