/**
 * Chains, actions, approval status, completion and receipts for clients (spec: "Endpoints").
 * POST /v1/chains · GET /v1/chains/{chain_id} · POST /v1/chains/{chain_id}/actions ·
 * GET /v1/chains/{chain_id}/approval-status · POST /v1/chains/{chain_id}/complete ·
 * GET /v1/chains/{chain_id}/receipt · GET /v1/receipts/{receipt_id}
 */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { Attr, SpanKind, setAttributes, withSpan } from "../../telemetry/tracing.js";
import { guard, principalLabel } from "../auth.js";
import { ApprovalStatusQuerySchema, approvalStatus } from "../approvals/decide.js";
import {
  CreateChainSchema,
  chainEvents,
  chainView,
  createChain,
  getChain,
  previewAction,
  RecordActionSchema,
  recordAction,
} from "./record.js";
import { CompleteChainSchema, completeChain, getChainReceipt, getReceipt } from "../receipts/complete.js";
import { chainEvidence } from "../receipts/verification.js";
import { ApiError } from "../errors.js";
import { serviceTracer } from "../tracing.js";

/** A 4xx refusal is an outcome of the request, not a failure of the span. */
const serverFault = (err: unknown) => !(err instanceof ApiError && err.statusCode < 500);
const errorCode = (err: unknown) =>
  err instanceof ApiError ? err.code : err instanceof Error ? err.name : "Error";

const ChainParams = z.object({ chain_id: z.uuid() });

export const chainRoutes: FastifyPluginAsyncZod = async (app) => {
  const tg = app.tg;
  /** A 401 from a guarded read or write means the remembered API key was revoked: forget it. */
  const forgetRefusedKey =
    (keyId: string | null) =>
    (err: unknown): never => {
      if (keyId && err instanceof ApiError && err.statusCode === 401) tg.apiKeys.invalidate(keyId);
      throw err;
    };

  app.post("/v1/chains", { schema: { body: CreateChainSchema } }, async (req, reply) => {
    const orgId = guard.client(req.principal);
    const chain = await createChain(tg.db, {
      orgId,
      body: req.body,
      createdBy: principalLabel(req.principal!),
      clock: tg.clock,
    });
    return reply.code(201).send(chain);
  });

  app.get("/v1/chains/:chain_id", { schema: { params: ChainParams } }, async (req) => {
    const orgId = guard.client(req.principal);
    const chain = await getChain(tg.db, orgId, req.params.chain_id);
    // evidence: whether the stored events and approvals still match the signed receipt (issue 18)
    const evidence = await chainEvidence(tg.db, {
      orgId,
      receiptId: chain.receipt_id,
      hmacKey: tg.receiptHmacKey,
      nowMs: tg.clock.nowMs(),
    });
    return { ...chainView(chain), events: await chainEvents(tg.db, chain.id), evidence };
  });

  app.post(
    "/v1/chains/:chain_id/actions",
    { schema: { params: ChainParams, body: RecordActionSchema }, config: { cachedApiKey: true } },
    async (req) => {
      const orgId = guard.client(req.principal);
      const keyId = req.principal?.kind === "api_key" ? req.principal.keyId : null;
      const end = tg.metrics.recordDuration.startTimer();
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
          const r = await recordAction(tg.db, {
            orgId,
            chainId: req.params.chain_id,
            action: req.body,
            clock: tg.clock,
            configs: tg.configs,
            chains: tg.chains,
            writer: tg.recordWriter,
            keyId,
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
      tg.metrics.decisions.inc({ outcome: result.policy_decision });
      return result;
    },
  );

  app.post(
    "/v1/chains/:chain_id/actions/evaluate",
    { schema: { params: ChainParams, body: RecordActionSchema }, config: { cachedApiKey: true } },
    async (req) => {
      const orgId = guard.client(req.principal);
      const keyId = req.principal?.kind === "api_key" ? req.principal.keyId : null;
      return previewAction(tg.db, {
        orgId,
        chainId: req.params.chain_id,
        action: req.body,
        clock: tg.clock,
        configs: tg.configs,
        keyId,
      }).catch(forgetRefusedKey(keyId));
    },
  );

  app.get(
    "/v1/chains/:chain_id/approval-status",
    { schema: { params: ChainParams, querystring: ApprovalStatusQuerySchema } },
    async (req, reply) => {
      const orgId = guard.client(req.principal);
      const read = () =>
        approvalStatus(tg.db, {
          orgId,
          chainId: req.params.chain_id,
          approvalId: req.query.approval_id,
          clock: tg.clock,
          keys: tg.keys,
        });
      // `wait` (beyond the spec): hold while pending, woken when the approval is resolved.
      const { wait } = req.query;
      if (!wait) return read();
      const status = await tg.approvalWaiters.hold(req.params.chain_id, wait * 1000, read);
      // Ended by shutdown: the client's next poll must not reuse this keep-alive connection,
      // which would keep the closing server open.
      if (tg.approvalWaiters.closed) reply.header("connection", "close");
      return status;
    },
  );

  app.post(
    "/v1/chains/:chain_id/complete",
    { schema: { params: ChainParams, body: CompleteChainSchema } },
    async (req) => {
      const orgId = guard.client(req.principal);
      // Chain completion: the event hash chain, the signed receipt, appended under the org's lock.
      const result = await withSpan(
        serviceTracer,
        "tollgate.receipt.build",
        { attributes: { [Attr.chainId]: req.params.chain_id }, failed: serverFault, errorType: errorCode },
        async (span) => {
          const r = await completeChain(tg.db, {
            orgId,
            chainId: req.params.chain_id,
            body: req.body,
            clock: tg.clock,
            hmacKey: tg.receiptHmacKey,
            keys: tg.keys,
            configs: tg.configs,
          });
          setAttributes(span, () => ({
            [Attr.receiptId]: r.receipt_id,
            [Attr.receiptNumber]: r.receipt_number,
            [Attr.chainStatus]: r.status,
          }));
          return r;
        },
      );
      tg.metrics.receiptsIssued.inc({ status: result.status });
      return result;
    },
  );

  app.get("/v1/chains/:chain_id/receipt", { schema: { params: ChainParams } }, async (req) => {
    const orgId = guard.client(req.principal);
    return (await getChainReceipt(tg.db, orgId, req.params.chain_id)).receipt;
  });

  app.get(
    "/v1/receipts/:receipt_id",
    { schema: { params: z.object({ receipt_id: z.uuid() }) } },
    async (req) => {
      const orgId = guard.client(req.principal);
      return (await getReceipt(tg.db, orgId, req.params.receipt_id)).receipt;
    },
  );
};
