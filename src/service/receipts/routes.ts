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
import { ReceiptExportSchema } from "../../cli/export-format.js";
import { JwksSchema } from "../../contract/v1/responses.js";
import {
  ApprovalVerificationSchema,
  CheckpointVerificationSchema,
  IssuedTokenSchema,
  IssueTokenSchema,
  LegacyReceiptVerificationSchema,
  ListTokensQuerySchema,
  ReceiptVerificationSchema,
  RevokedTokenSchema,
  TokenListSchema,
} from "../../contract/v1/verification.js";
import { CheckpointSchema } from "../../receipts/checkpoint.js";
import { guard, type Principal, principalLabel } from "../auth.js";
import type { Clock } from "../clock.js";
import type { Database } from "../db/pool.js";
import { forbidden, unauthorized } from "../errors.js";
import type { Metrics } from "../metrics.js";
import { latestCheckpoint } from "./checkpoints.js";
import { ExportQuerySchema, exportReceipts } from "./export.js";
import type { ReceiptHmacKeys } from "./hmac-keys.js";
import { legacyHooks } from "./legacy.js";
import { type PublicVerificationOptions, publicVerificationRoutes } from "./public-routes.js";
import { issueToken, listTokens, revokeToken } from "./public-tokens.js";
import type { SigningKeys } from "./signing-keys.js";
import {
  legacyReceiptView,
  verifyCheckpoint,
  verifyStoredApproval,
  verifyStoredReceipt,
} from "./verification.js";

/** What the verification routes use, and their options. */
export interface VerificationRoutesOptions {
  db: Database;
  clock: Clock;
  metrics: Metrics;
  signingKeys: SigningKeys;
  /** Verifies receipt HMACs (derived from the master key). */
  receiptHmacKeys: ReceiptHmacKeys;
  /** Base of the public verification URLs of issued tokens. */
  publicUrl: string;
  /** Rate limit of the public routes (default 60 requests per minute per client address). */
  public?: PublicVerificationOptions;
}

/** Any principal of an organization: an API key (client or admin), a workload token or a user session. */
function orgCaller(p: Principal | null): string {
  if (!p) throw unauthorized();
  if (p.kind === "api_key" || p.kind === "user" || p.kind === "workload") return p.orgId;
  throw forbidden("An organization API key, workload token or session is required");
}

/** The verification routes and, inside, the public ones. */
export const verificationRoutes: FastifyPluginAsyncZod<VerificationRoutesOptions> = async (app, opts) => {
  const now = () => opts.clock.nowMs();

  app.get(
    "/v1/verification/v2/receipts/:receipt_id",
    { schema: { params: z.object({ receipt_id: z.uuid() }), response: { 200: ReceiptVerificationSchema } } },
    async (req) => {
      const { orgId } = guard.member(req.principal);
      const v = await verifyStoredReceipt(opts.db, {
        orgId,
        receiptId: req.params.receipt_id,
        hmacKeys: opts.receiptHmacKeys,
        nowMs: now(),
      });
      opts.metrics.verifications.inc({
        surface: "authenticated",
        artifact_type: "receipt",
        status: v.overall_status,
      });
      return v;
    },
  );

  app.get(
    "/v1/verification/v2/approvals/:approval_id",
    {
      schema: { params: z.object({ approval_id: z.uuid() }), response: { 200: ApprovalVerificationSchema } },
    },
    async (req) => {
      const { orgId, isAdmin } = guard.member(req.principal);
      const v = await verifyStoredApproval(opts.db, {
        orgId,
        approvalId: req.params.approval_id,
        role: isAdmin ? "admin" : "member",
        nowMs: now(),
      });
      opts.metrics.verifications.inc({
        surface: "authenticated",
        artifact_type: "approval",
        status: v.overall_status,
      });
      return v;
    },
  );

  app.post(
    "/v1/public-verification-tokens",
    { schema: { body: IssueTokenSchema, response: { 201: IssuedTokenSchema } } },
    async (req, reply) => {
      const orgId = guard.admin(req.principal);
      const issued = await issueToken(opts.db, {
        orgId,
        body: req.body,
        createdBy: principalLabel(req.principal!),
        nowMs: now(),
        publicUrl: opts.publicUrl,
      });
      return reply.code(201).header("cache-control", "no-store").send(issued);
    },
  );

  app.get(
    "/v1/public-verification-tokens",
    { schema: { querystring: ListTokensQuerySchema, response: { 200: TokenListSchema } } },
    async (req) => {
      const orgId = guard.admin(req.principal);
      return { tokens: await listTokens(opts.db, orgId, req.query) };
    },
  );

  app.post(
    "/v1/public-verification-tokens/:token_id/revoke",
    { schema: { params: z.object({ token_id: z.uuid() }), response: { 200: RevokedTokenSchema } } },
    async (req) => {
      const orgId = guard.admin(req.principal);
      return revokeToken(opts.db, { orgId, tokenId: req.params.token_id, nowMs: now() });
    },
  );

  app.get(
    "/v1/receipts/export",
    { schema: { querystring: ExportQuerySchema, response: { 200: ReceiptExportSchema } } },
    async (req) => {
      const { orgId } = guard.member(req.principal);
      return exportReceipts(opts.db, { orgId, query: req.query, keys: opts.signingKeys, nowMs: now() });
    },
  );

  app.get(
    "/v1/receipts/checkpoint",
    { schema: { response: { 200: CheckpointSchema } } },
    async (req, reply) => {
      const { orgId } = guard.member(req.principal);
      reply.header("cache-control", "no-store");
      return latestCheckpoint(opts.db, { orgId, keys: opts.signingKeys, nowMs: now() });
    },
  );

  app.post(
    "/v1/verification/v2/checkpoints",
    { schema: { body: CheckpointSchema, response: { 200: CheckpointVerificationSchema } } },
    async (req) => {
      const { orgId } = guard.member(req.principal);
      const v = await verifyCheckpoint(opts.db, { orgId, checkpoint: req.body, nowMs: now() });
      opts.metrics.verifications.inc({
        surface: "authenticated",
        artifact_type: "checkpoint",
        status: v.overall_status,
      });
      return v;
    },
  );

  for (const purpose of ["receipt", "approval"] as const) {
    app.get(
      `/.well-known/tollgate/${purpose}-keys.json`,
      { schema: { response: { 200: JwksSchema } } },
      async (_req, reply) => {
        reply.header("cache-control", "public, max-age=300");
        return opts.signingKeys.jwks(purpose);
      },
    );
  }

  app.get(
    "/v1/receipts/:receipt_id/verify",
    {
      schema: {
        params: z.object({ receipt_id: z.uuid() }),
        response: { 200: LegacyReceiptVerificationSchema },
      },
      ...legacyHooks(
        opts.metrics,
        "/v1/receipts/{receipt_id}/verify",
        (req) =>
          `/v1/verification/v2/receipts/${encodeURIComponent((req.params as { receipt_id: string }).receipt_id)}`,
      ),
    },
    async (req) => {
      const orgId = orgCaller(req.principal);
      const v = await verifyStoredReceipt(opts.db, {
        orgId,
        receiptId: req.params.receipt_id,
        hmacKeys: opts.receiptHmacKeys,
        nowMs: now(),
      });
      opts.metrics.verifications.inc({
        surface: "legacy",
        artifact_type: "receipt",
        status: v.overall_status,
      });
      return legacyReceiptView(v);
    },
  );

  await app.register(publicVerificationRoutes, {
    ...opts.public,
    db: opts.db,
    clock: opts.clock,
    metrics: opts.metrics,
    receiptHmacKeys: opts.receiptHmacKeys,
  });
};
