/**
 * Chains, actions, approval status, completion and receipts for clients (spec: "Endpoints").
 * POST /v1/chains · GET /v1/chains/{chain_id} · POST /v1/chains/{chain_id}/actions ·
 * GET /v1/chains/{chain_id}/approval-status · POST /v1/chains/{chain_id}/complete ·
 * GET /v1/chains/{chain_id}/receipt · GET /v1/receipts/{receipt_id}
 */

import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { ApprovalStatusResponseSchema } from "../../contract/v1/approvals.js";
import {
  ChainViewSchema,
  CompleteChainSchema,
  CompleteResponseSchema,
  CreateChainSchema,
  RecordActionResponseSchema,
  RecordActionSchema,
} from "../../contract/v1/chains.js";
import {
  ChainWithEvidenceSchema,
  PreviewResponseSchema,
  StoredReceiptSchema,
} from "../../contract/v1/responses.js";
import { Attr, SpanKind, setAttributes, withSpan } from "../../telemetry/tracing.js";
import { ApprovalStatusQuerySchema, approvalStatus } from "../approvals/views.js";
import type { ApprovalWaiters } from "../approvals/waiters.js";
import { type ApiKeyCache, guard, identityOf, principalLabel } from "../auth.js";
import type { Clock } from "../clock.js";
import type { Database } from "../db/pool.js";
import { ApiError } from "../errors.js";
import type { Metrics } from "../metrics.js";
import type { OrgConfigCache } from "../orgs/orgs.js";
import { completeChain } from "../receipts/complete.js";
import type { ReceiptHmacKeys } from "../receipts/hmac-keys.js";
import type { SigningKeys } from "../receipts/signing-keys.js";
import { getChainReceipt, getReceipt } from "../receipts/store.js";
import { chainEvidence } from "../receipts/verification.js";
import { serviceTracer } from "../tracing.js";
import { createChain, previewAction, recordAction } from "./record.js";
import type { RecordBatcher } from "./record-batch.js";
import type { ChainSnapshotCache } from "./snapshot-cache.js";
import { chainEvents, getChain } from "./store.js";
import { chainView } from "./views.js";

/** A 4xx refusal is an outcome of the request, not a failure of the span. */
const serverFault = (err: unknown) => !(err instanceof ApiError && err.statusCode < 500);
const errorCode = (err: unknown) =>
  err instanceof ApiError ? err.code : err instanceof Error ? err.name : "Error";

const ChainParams = z.object({ chain_id: z.uuid() });

/** What the chain routes use. */
export interface ChainRouteDeps {
  db: Database;
  clock: Clock;
  metrics: Metrics;
  configs: OrgConfigCache;
  /** Chain states remembered by the recording hot path (docs/adr/0006). */
  snapshots: ChainSnapshotCache;
  /** Group commit of the recording hot path's guarded writes. */
  writer: RecordBatcher;
  /** API keys resolved recently; a refused key is forgotten. */
  apiKeys: ApiKeyCache;
  signingKeys: SigningKeys;
  /** Held approval-status requests (`wait`). */
  approvalWaiters: ApprovalWaiters;
  /** Signs receipts (derived from the master key). */
  receiptHmacKeys: ReceiptHmacKeys;
}

/** The chain routes (see the module comment). */
export const chainRoutes: FastifyPluginAsyncZod<ChainRouteDeps> = async (app, deps) => {
  /** A 401 from a guarded read or write means the remembered API key was revoked: forget it. */
  const forgetRefusedKey =
    (keyId: string | null) =>
    (err: unknown): never => {
      if (keyId && err instanceof ApiError && err.statusCode === 401) deps.apiKeys.invalidate(keyId);
      throw err;
    };

  app.post(
    "/v1/chains",
    { schema: { body: CreateChainSchema, response: { 201: ChainViewSchema } } },
    async (req, reply) => {
      const orgId = guard.client(req.principal);
      const chain = await createChain(deps.db, {
        orgId,
        body: req.body,
        createdBy: principalLabel(req.principal!),
        principal: identityOf(req.principal),
        clock: deps.clock,
      });
      return reply.code(201).send(chain);
    },
  );

  app.get(
    "/v1/chains/:chain_id",
    { schema: { params: ChainParams, response: { 200: ChainWithEvidenceSchema } } },
    async (req) => {
      const orgId = guard.client(req.principal);
      const chain = await getChain(deps.db, orgId, req.params.chain_id);
      // evidence: whether the stored events and approvals still match the signed receipt (issue 18)
      const evidence = await chainEvidence(deps.db, {
        orgId,
        receiptId: chain.receipt_id,
        hmacKeys: deps.receiptHmacKeys,
        nowMs: deps.clock.nowMs(),
      });
      return { ...chainView(chain), events: await chainEvents(deps.db, chain.id), evidence };
    },
  );

  app.post(
    "/v1/chains/:chain_id/actions",
    {
      schema: {
        params: ChainParams,
        body: RecordActionSchema,
        response: { 200: RecordActionResponseSchema },
      },
      config: { cachedApiKey: true },
    },
    async (req) => {
      const orgId = guard.client(req.principal);
      const keyId = req.principal?.kind === "api_key" ? req.principal.keyId : null;
      const end = deps.metrics.recordDuration.startTimer();
      // The decision: policy evaluation and the event's record, in one span.
      const result = await withSpan(
        serviceTracer,
        "tollgate.decision",
        {
          kind: SpanKind.INTERNAL,
          attributes: {
            [Attr.chainId]: req.params.chain_id,
            [Attr.agentName]: req.body.agent_name,
            [Attr.actionType]: req.body.action_type,
            [Attr.actionName]: req.body.action_name,
          },
          failed: serverFault,
          errorType: errorCode,
        },
        async (span) => {
          const r = await recordAction(deps.db, {
            orgId,
            chainId: req.params.chain_id,
            action: req.body,
            clock: deps.clock,
            configs: deps.configs,
            chains: deps.snapshots,
            writer: deps.writer,
            keyId,
            identity: identityOf(req.principal),
          }).catch(forgetRefusedKey(keyId));
          setAttributes(span, () => ({
            [Attr.decision]: r.policy_decision,
            [Attr.decisionSource]: r.decision_source,
            [Attr.eventId]: r.event_id,
            ...(r.approval_id && { [Attr.approvalId]: r.approval_id }),
          }));
          return r;
        },
      );
      end();
      deps.metrics.decisions.inc({ outcome: result.policy_decision });
      return result;
    },
  );

  app.post(
    "/v1/chains/:chain_id/actions/evaluate",
    {
      schema: { params: ChainParams, body: RecordActionSchema, response: { 200: PreviewResponseSchema } },
      config: { cachedApiKey: true },
    },
    async (req) => {
      const orgId = guard.client(req.principal);
      const keyId = req.principal?.kind === "api_key" ? req.principal.keyId : null;
      return previewAction(deps.db, {
        orgId,
        chainId: req.params.chain_id,
        action: req.body,
        clock: deps.clock,
        configs: deps.configs,
        keyId,
        identity: identityOf(req.principal),
      }).catch(forgetRefusedKey(keyId));
    },
  );

  app.get(
    "/v1/chains/:chain_id/approval-status",
    {
      schema: {
        params: ChainParams,
        querystring: ApprovalStatusQuerySchema,
        response: { 200: ApprovalStatusResponseSchema },
      },
    },
    async (req, reply) => {
      const orgId = guard.client(req.principal);
      const read = () =>
        approvalStatus(deps, { orgId, chainId: req.params.chain_id, approvalId: req.query.approval_id });
      // `wait` (beyond the spec): hold while pending, woken when the approval is resolved.
      const { wait } = req.query;
      if (!wait) return read();
      const { status, ended } = await deps.approvalWaiters.hold(req.params.chain_id, wait * 1000, read);
      deps.metrics.approvalHolds.inc({ ended });
      // Ended by shutdown: the client's next poll must not reuse this keep-alive connection,
      // which would keep the closing server open.
      if (deps.approvalWaiters.closed) reply.header("connection", "close");
      return status;
    },
  );

  app.post(
    "/v1/chains/:chain_id/complete",
    { schema: { params: ChainParams, body: CompleteChainSchema, response: { 200: CompleteResponseSchema } } },
    async (req) => {
      const orgId = guard.client(req.principal);
      // Chain completion: the event hash chain, the signed receipt, appended under the org's lock.
      const result = await withSpan(
        serviceTracer,
        "tollgate.receipt.build",
        { attributes: { [Attr.chainId]: req.params.chain_id }, failed: serverFault, errorType: errorCode },
        async (span) => {
          const r = await completeChain(deps.db, {
            orgId,
            chainId: req.params.chain_id,
            body: req.body,
            clock: deps.clock,
            hmacKeys: deps.receiptHmacKeys,
            keys: deps.signingKeys,
            configs: deps.configs,
            approvalWaiters: deps.approvalWaiters,
          }).catch((err: unknown) => {
            // A server fault here means no receipt was built, signed or stored (alert
            // TollgateReceiptFailures); 4xx (unknown or already completed chain) are the caller's.
            if (serverFault(err)) deps.metrics.receiptFailures.inc();
            throw err;
          });
          setAttributes(span, () => ({
            [Attr.receiptId]: r.receipt_id,
            [Attr.receiptNumber]: r.receipt_number,
            [Attr.chainStatus]: r.status,
          }));
          return r;
        },
      );
      deps.metrics.receiptsIssued.inc({ status: result.status });
      return result;
    },
  );

  app.get(
    "/v1/chains/:chain_id/receipt",
    { schema: { params: ChainParams, response: { 200: StoredReceiptSchema } } },
    async (req) => {
      const orgId = guard.client(req.principal);
      return (await getChainReceipt(deps.db, orgId, req.params.chain_id)).receipt;
    },
  );

  app.get(
    "/v1/receipts/:receipt_id",
    { schema: { params: z.object({ receipt_id: z.uuid() }), response: { 200: StoredReceiptSchema } } },
    async (req) => {
      const orgId = guard.client(req.principal);
      return (await getReceipt(deps.db, orgId, req.params.receipt_id)).receipt;
    },
  );
};
