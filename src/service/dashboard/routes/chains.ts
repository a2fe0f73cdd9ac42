/**
 * GET /dashboard/chains/{chain_id}: one chain of the viewer's organization with its events, the
 * approvals and exceptions behind them, and its receipt verified on the spot (pages/chain.ts).
 * An id that is not a UUID, or a chain of another organization, is a 404 page.
 */
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { chainApprovals } from "../../approvals/store.js";
import { chainEvents, getChain } from "../../chains/store.js";
import { chainView } from "../../chains/views.js";
import { notFound } from "../../errors.js";
import { exceptionsUsed } from "../../exceptions/store.js";
import { getReceipt } from "../../receipts/store.js";
import { verifyStoredReceipt } from "../../receipts/verification.js";
import { chainBody, type ReceiptSection } from "../pages/chain.js";
import { type DashboardDeps, requireViewer } from "../request.js";
import { checkFirst, missingAsNull, renderPage, Uuid } from "./shared.js";

const ChainParamsSchema = z.object({ chain_id: Uuid });

/** Registers GET /dashboard/chains/{chain_id}. */
export function chainRoutes(app: FastifyInstance, deps: DashboardDeps): void {
  const { ctx } = deps;
  app.withTypeProvider<ZodTypeProvider>().get(
    "/dashboard/chains/:chain_id",
    {
      ...checkFirst(requireViewer),
      schema: { params: ChainParamsSchema },
      schemaErrorFormatter: () => notFound("Chain"),
    },
    async (req, reply) => {
      const v = requireViewer(req);
      const row = await getChain(ctx.db, v.orgId, req.params.chain_id);
      const chain = chainView(row);
      const events = await chainEvents(ctx.db, row.id);
      const approvals = await chainApprovals(ctx.db, row.id);
      const exceptions = await exceptionsUsed(ctx.db, v.orgId, [
        ...new Set(events.map((e) => e.exception_id).filter((x): x is string => !!x)),
      ]);
      const receipt = await receiptSection(deps, v.orgId, row.receipt_id);
      return renderPage(
        reply,
        deps,
        v,
        `Chain ${chain.name}`,
        chainBody({ chain, events, approvals, exceptions, receipt }),
        { active: "approvals" },
      );
    },
  );
}

/**
 * The chain's receipt and its verification: none yet, missing (the chain names a receipt that
 * is gone), verified, or unverified when verification itself failed (logged, not thrown).
 */
async function receiptSection(
  deps: DashboardDeps,
  orgId: string,
  receiptId: string | null,
): Promise<ReceiptSection> {
  const { ctx } = deps;
  if (!receiptId) return { kind: "none" };
  const stored = await getReceipt(ctx.db, orgId, receiptId).catch(missingAsNull);
  if (!stored) return { kind: "missing", receiptId };
  const base = {
    receiptNumber: stored.receipt_number,
    receiptId: stored.id,
    createdAt: stored.receipt.completed_at,
  };
  try {
    const verification = await verifyStoredReceipt(ctx.db, {
      orgId,
      receiptId: stored.id,
      hmacKeys: ctx.receiptHmacKeys,
      nowMs: ctx.clock.nowMs(),
    });
    return { kind: "verified", ...base, verification };
  } catch (err) {
    ctx.log.warn({ err, receipt_id: stored.id }, "receipt verification failed on the chain page");
    return { kind: "unverified", ...base, reason: "Verification is unavailable right now." };
  }
}
