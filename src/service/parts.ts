/**
 * The parts of one running governance service, built once by app.ts `buildService` (the
 * composition root) and handed out by name: each route plugin declares in its options exactly
 * the parts it uses. The whole record is returned to the caller of buildService (tests, main.ts);
 * it is not decorated onto Fastify.
 */
import type { ApprovalWaiters } from "./approvals/waiters.js";
import type { ApiKeyCache } from "./auth.js";
import type { RecordBatcher } from "./chains/record-batch.js";
import type { ChainSnapshotCache } from "./chains/snapshot-cache.js";
import type { Clock } from "./clock.js";
import type { Database } from "./db/pool.js";
import type { WorkloadAuthenticator } from "./identity/token-review.js";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics.js";
import type { OrgConfigCache } from "./orgs/orgs.js";
import type { ReceiptHmacKeys } from "./receipts/hmac-keys.js";
import type { SigningKeys } from "./receipts/signing-keys.js";

/** Shared parts of one running governance service. */
export interface ServiceParts {
  db: Database;
  clock: Clock;
  log: Logger;
  configs: OrgConfigCache;
  /** Chain states remembered by the recording hot path (docs/adr/0006). */
  chainSnapshots: ChainSnapshotCache;
  /** Group commit of the recording hot path's guarded writes. */
  recordWriter: RecordBatcher;
  /** API keys resolved recently, for routes that re-check the key in their write. */
  apiKeys: ApiKeyCache;
  /** Ed25519 receipt and approval signing keys (rotation, JWKS). */
  signingKeys: SigningKeys;
  /** Held approval-status requests (`wait`), woken when their approval is resolved. */
  approvalWaiters: ApprovalWaiters;
  metrics: Metrics;
  /** Each organization's receipt HMAC keys (rotation, revocation). Never leave the service. */
  receiptHmacKeys: ReceiptHmacKeys;
  /** Derived from the master key; signs approval e-mail links. */
  linkKey: Buffer;
  masterKey: Buffer;
  adminToken: string;
  publicUrl: string;
  /** Verifies workload tokens (issue 27); null when workload identity is off. */
  workloads: WorkloadAuthenticator | null;
}
