/**
 * Verification v2 and public verification tokens (spec: "Endpoints", "Verification results",
 * "Public verification token", "Versioning"), plus what lets a third party check receipts
 * offline (beyond the spec):
 *
 * - GET  /v1/verification/v2/receipts/{receipt_id}          member | admin
 * - GET  /v1/verification/v2/approvals/{approval_id}        member | admin (admin adds audit_context)
 * - POST /v1/public-verification-tokens                     admin
 * - GET  /v1/public-verification-tokens                     admin
 * - POST /v1/public-verification-tokens/{token_id}/revoke   admin
 * - GET  /v1/receipts/export                                member | admin
 * - GET  /v1/receipts/checkpoint                            member | admin (signed head of the log)
 * - POST /v1/verification/v2/checkpoints                    member | admin (does the log extend it?)
 * - GET  /.well-known/tollgate/receipt-keys.json            anyone (JWKS)
 * - GET  /.well-known/tollgate/approval-keys.json           anyone (JWKS)
 * - GET  /v1/receipts/{receipt_id}/verify                   legacy: client key | member
 * - the public routes of public-verification.ts (rate-limited).
 *
 * Another organization's ids answer 404, never 403.
 */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { CheckpointSchema } from "../../receipts/checkpoint.js";
import { guard, type Principal, principalLabel } from "../auth.js";
import { latestCheckpoint } from "./checkpoints.js";
import {
  IssueTokenSchema,
  issueToken,
  ListTokensQuerySchema,
  listTokens,
  revokeToken,
} from "./public-tokens.js";
import { ExportQuerySchema, exportReceipts } from "./export.js";
import {
  legacyReceiptView,
  verifyCheckpoint,
  verifyStoredApproval,
  verifyStoredReceipt,
} from "./verification.js";
import { forbidden, unauthorized } from "../errors.js";
import { legacyHooks } from "./legacy.js";
import { type PublicVerificationOptions, publicVerificationRoutes } from "./public-routes.js";

/** Options of the verification plugin. */
export interface VerificationRoutesOptions {
  /** Rate limit of the public routes (default 60 requests per minute per client address). */
  public?: PublicVerificationOptions;
}

/** Any principal of an organization: an API key (client or admin) or a user session. */
function orgCaller(p: Principal | null): string {
  if (!p) throw unauthorized();
  if (p.kind === "api_key" || p.kind === "user") return p.orgId;
  throw forbidden("An organization API key or session is required");
}

export const verificationRoutes: FastifyPluginAsyncZod<VerificationRoutesOptions> = async (app, opts) => {
  const tg = app.tg;
  const now = () => tg.clock.nowMs();

  app.get(
    "/v1/verification/v2/receipts/:receipt_id",
    { schema: { params: z.object({ receipt_id: z.uuid() }) } },
    async (req) => {
      const { orgId } = guard.member(req.principal);
      const v = await verifyStoredReceipt(tg.db, {
        orgId,
        receiptId: req.params.receipt_id,
        hmacKey: tg.receiptHmacKey,
        nowMs: now(),
      });
      tg.metrics.verifications.inc({
        surface: "authenticated",
        artifact_type: "receipt",
        status: v.overall_status,
      });
      return v;
    },
  );

  app.get(
    "/v1/verification/v2/approvals/:approval_id",
    { schema: { params: z.object({ approval_id: z.uuid() }) } },
    async (req) => {
      const { orgId, isAdmin } = guard.member(req.principal);
      const v = await verifyStoredApproval(tg.db, {
        orgId,
        approvalId: req.params.approval_id,
        role: isAdmin ? "admin" : "member",
        nowMs: now(),
      });
      tg.metrics.verifications.inc({
        surface: "authenticated",
        artifact_type: "approval",
        status: v.overall_status,
      });
      return v;
    },
  );

  app.post("/v1/public-verification-tokens", { schema: { body: IssueTokenSchema } }, async (req, reply) => {
    const orgId = guard.admin(req.principal);
    const issued = await issueToken(tg.db, {
      orgId,
      body: req.body,
      createdBy: principalLabel(req.principal!),
      nowMs: now(),
      publicUrl: tg.publicUrl,
    });
    return reply.code(201).header("cache-control", "no-store").send(issued);
  });

  app.get(
    "/v1/public-verification-tokens",
    { schema: { querystring: ListTokensQuerySchema } },
    async (req) => {
      const orgId = guard.admin(req.principal);
      return { tokens: await listTokens(tg.db, orgId, req.query) };
    },
  );

  app.post(
    "/v1/public-verification-tokens/:token_id/revoke",
    { schema: { params: z.object({ token_id: z.uuid() }) } },
    async (req) => {
      const orgId = guard.admin(req.principal);
      return revokeToken(tg.db, { orgId, tokenId: req.params.token_id, nowMs: now() });
    },
  );

  app.get("/v1/receipts/export", { schema: { querystring: ExportQuerySchema } }, async (req) => {
    const { orgId } = guard.member(req.principal);
    return exportReceipts(tg.db, { orgId, query: req.query, keys: tg.keys, nowMs: now() });
  });

  app.get("/v1/receipts/checkpoint", async (req, reply) => {
    const { orgId } = guard.member(req.principal);
    reply.header("cache-control", "no-store");
    return latestCheckpoint(tg.db, { orgId, keys: tg.keys, nowMs: now() });
  });

  app.post("/v1/verification/v2/checkpoints", { schema: { body: CheckpointSchema } }, async (req) => {
    const { orgId } = guard.member(req.principal);
    const v = await verifyCheckpoint(tg.db, { orgId, checkpoint: req.body, nowMs: now() });
    tg.metrics.verifications.inc({
      surface: "authenticated",
      artifact_type: "checkpoint",
      status: v.overall_status,
    });
    return v;
  });

  for (const purpose of ["receipt", "approval"] as const) {
    app.get(`/.well-known/tollgate/${purpose}-keys.json`, async (_req, reply) => {
      reply.header("cache-control", "public, max-age=300");
      return tg.keys.jwks(purpose);
    });
  }

  app.get(
    "/v1/receipts/:receipt_id/verify",
    {
      schema: { params: z.object({ receipt_id: z.uuid() }) },
      ...legacyHooks(
        tg,
        "/v1/receipts/{receipt_id}/verify",
        (req) =>
          `/v1/verification/v2/receipts/${encodeURIComponent((req.params as { receipt_id: string }).receipt_id)}`,
      ),
    },
    async (req) => {
      const orgId = orgCaller(req.principal);
      const v = await verifyStoredReceipt(tg.db, {
        orgId,
        receiptId: req.params.receipt_id,
        hmacKey: tg.receiptHmacKey,
        nowMs: now(),
      });
      tg.metrics.verifications.inc({ surface: "legacy", artifact_type: "receipt", status: v.overall_status });
      return legacyReceiptView(v);
    },
  );

  await app.register(publicVerificationRoutes, opts.public ?? {});
};
