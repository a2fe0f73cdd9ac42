/**
 * What every route needs, built once per service instance and decorated onto Fastify.
 */
import type { ApiKeyCache } from "./auth.js";
import type { Clock } from "./clock.js";
import type { Database } from "./db/pool.js";
import type { ApprovalWaiters } from "./approvals/waiters.js";
import type { ChainStateCache } from "./chains/snapshot-cache.js";
import type { SigningKeys } from "./receipts/signing-keys.js";
import type { OrgConfigCache } from "./orgs/orgs.js";
import type { RecordBatcher } from "./chains/record-batch.js";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics.js";

/** Shared services of one running governance service. */
export interface ServiceContext {
  db: Database;
  clock: Clock;
  log: Logger;
  configs: OrgConfigCache;
  /** Chain states remembered by the recording hot path (docs/adr/0006). */
  chains: ChainStateCache;
  /** Group commit of the recording hot path's guarded writes. */
  recordWriter: RecordBatcher;
  /** API keys resolved recently, for routes that re-check the key in their write. */
  apiKeys: ApiKeyCache;
  keys: SigningKeys;
  /** Held approval-status requests (`wait`), woken when their approval is resolved. */
  approvalWaiters: ApprovalWaiters;
  metrics: Metrics;
  /** Derived from the master key; signs receipts. Never leaves the service. */
  receiptHmacKey: Buffer;
  /** Derived from the master key; signs approval e-mail links. */
  linkKey: Buffer;
  masterKey: Buffer;
  adminToken: string;
  publicUrl: string;
}

declare module "fastify" {
  interface FastifyInstance {
    tg: ServiceContext;
  }
  interface FastifyRequest {
    principal: import("./auth.js").Principal | null;
  }
  interface FastifyContextConfig {
    /** The route re-checks the API key inside its own write, so the key may come from ApiKeyCache. */
    cachedApiKey?: boolean;
  }
}
