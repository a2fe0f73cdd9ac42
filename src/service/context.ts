/**
 * What every route needs, built once per service instance and decorated onto Fastify.
 */
import type { Clock } from "./clock.js";
import type { Database } from "./db/pool.js";
import type { SigningKeys } from "./domain/keys.js";
import type { OrgConfigCache } from "./domain/orgs.js";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics.js";

/** Shared services of one running governance service. */
export interface ServiceContext {
  db: Database;
  clock: Clock;
  log: Logger;
  configs: OrgConfigCache;
  keys: SigningKeys;
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
}
