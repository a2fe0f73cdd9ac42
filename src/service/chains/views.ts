/** The chain as the API, receipts and mail show it (spec: "Chain", receipt cumulative_metrics). */
import type { ChainViewSchema, WireOf } from "../../contract/v1/chains.js";
import type { ChainRow } from "./store.js";

/** The chain as the API returns it (GET /v1/chains/{chain_id}, POST /v1/chains). */
export function chainView(c: ChainRow) {
  return {
    chain_id: c.id,
    name: c.name,
    metadata: c.metadata,
    policy_config: c.policy_config,
    environment: c.environment,
    status: c.status,
    failure: c.failure,
    started_at: new Date(c.started_at).toISOString(),
    completed_at: c.completed_at ? new Date(c.completed_at).toISOString() : null,
    total_actions: c.event_count,
    cumulative_metrics: cumulativeMetrics(c),
    receipt_id: c.receipt_id,
    principal: c.principal ?? null,
  } satisfies WireOf<typeof ChainViewSchema>;
}
/** A chain as the service writes it (checked against the contract's ChainViewSchema). */
export type ChainBody = ReturnType<typeof chainView>;

/** The receipt's cumulative_metrics of a chain (USD amounts rounded to 6 places, counts, sorted domain names). */
export const cumulativeMetrics = (
  c: Pick<
    ChainRow,
    | "financial_exposure_usd"
    | "external_communications_count"
    | "records_modified_count"
    | "domains_contacted"
    | "estimated_cost_usd"
  >,
) => ({
  financial_exposure_usd: round6(c.financial_exposure_usd),
  external_communications_count: c.external_communications_count,
  records_modified_count: c.records_modified_count,
  external_domains_contacted: [...c.domains_contacted].sort(),
  estimated_cost_usd: round6(c.estimated_cost_usd),
});

const round6 = (n: number) => Math.round(n * 1e6) / 1e6;
