/**
 * Public verification (spec: "Endpoints" GET /public/v2/verify/{opaque_token}, "Authentication"
 * 5, "Versioning" 2): authorized solely by the opaque token in the path. Returns the minimized
 * result; unknown, malformed and revoked tokens (and tokens whose artifact is gone) get the same
 * sanitized error, byte for byte. Also the legacy raw-UUID public approval route
 * (GET /public/approvals/{approval_id}/verify, compatibility only).
 *
 * Every route here is rate-limited per client address by @fastify/rate-limit, registered in this
 * encapsulated plugin only. Request logs of these routes never carry the path (the token is a
 * bearer secret).
 */

import rateLimit from "@fastify/rate-limit";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { ApiErrorCode } from "../../contract/v1/errors.js";
import {
  type PublicVerificationResult,
  PublicVerificationResultSchema,
} from "../../contract/v1/verification.js";
import { approvalOrgId } from "../approvals/store.js";
import type { Clock } from "../clock.js";
import type { Database } from "../db/pool.js";
import { ApiError } from "../errors.js";
import type { Metrics } from "../metrics.js";
import type { ReceiptHmacKeys } from "./hmac-keys.js";
import { legacyHooks } from "./legacy.js";
import { resolveToken } from "./public-tokens.js";
import { minimizeVerification, verifyStoredApproval, verifyStoredReceipt } from "./verification.js";

/** Rate limits of the public verification plugin. */
export interface PublicVerificationOptions {
  /** Requests per client address per window; default 60. */
  rateLimitMax?: number;
  /** Window length in ms; default 60 000. */
  rateLimitWindowMs?: number;
}

/** The one sanitized error of the public verification surface (404, no details). */
export const verificationUnavailable = () =>
  new ApiError(404, ApiErrorCode.VERIFICATION_UNAVAILABLE, "Verification is not available for this link");

/**
 * True for a path of the public verification surface: a request there whose path is not valid
 * percent-encoded UTF-8 gets the same uniform 404 as any other bad link (app.ts frameworkErrors).
 */
export const isPublicVerificationPath = (url: string) =>
  url.startsWith("/public/v2/verify/") || url.startsWith("/public/approvals/");

/** The headers every answer of the public verification surface carries. */
export const PUBLIC_VERIFICATION_HEADERS = { "cache-control": "no-store", "referrer-policy": "no-referrer" };

const redactedReq = (path: string) => (req: FastifyRequest) => ({
  method: req.method,
  url: path,
  remoteAddress: req.ip,
});

/** What the public verification routes use, with their rate limits. */
export interface PublicVerificationDeps extends PublicVerificationOptions {
  db: Database;
  clock: Clock;
  metrics: Metrics;
  /** Verifies receipt HMACs (each organization's keys). */
  receiptHmacKeys: ReceiptHmacKeys;
}

/** The public verification routes (token holders, no account). */
export const publicVerificationRoutes: FastifyPluginAsyncZod<PublicVerificationDeps> = async (app, opts) => {
  await app.register(rateLimit, {
    global: true,
    max: opts.rateLimitMax ?? 60,
    timeWindow: opts.rateLimitWindowMs ?? 60_000,
    errorResponseBuilder: () =>
      new ApiError(
        429,
        ApiErrorCode.RATE_LIMITED,
        "Too many verification requests from this address; retry later",
      ),
  });
  app.addHook("onRequest", async (_req, reply) => {
    reply.headers(PUBLIC_VERIFICATION_HEADERS);
  });

  app.get(
    // A wildcard, not a parameter: tokens of any length or shape (the router's 100-character
    // parameter limit would answer 414) reach the handler and get the one sanitized error.
    "/public/v2/verify/*",
    {
      schema: { params: z.object({ "*": z.string() }), response: { 200: PublicVerificationResultSchema } },
      logSerializers: { req: redactedReq("/public/v2/verify/[REDACTED]") },
      // A token with NUL or unpaired surrogates is one more bad link: the uniform 404, no 400.
      config: { unsafeInputError: verificationUnavailable },
    },
    async (req): Promise<PublicVerificationResult> => {
      const nowMs = opts.clock.nowMs();
      const grant = await resolveToken(opts.db, req.params["*"], nowMs);
      if (!grant) {
        opts.metrics.verifications.inc({
          surface: "public",
          artifact_type: "unknown",
          status: "unavailable",
        });
        throw verificationUnavailable();
      }
      try {
        const v =
          grant.artifactType === "receipt"
            ? await verifyStoredReceipt(opts.db, {
                orgId: grant.orgId,
                receiptId: grant.artifactId,
                hmacKeys: opts.receiptHmacKeys,
                nowMs,
              })
            : await verifyStoredApproval(opts.db, {
                orgId: grant.orgId,
                approvalId: grant.artifactId,
                role: "member",
                nowMs,
              });
        opts.metrics.verifications.inc({
          surface: "public",
          artifact_type: v.artifact_type,
          status: v.overall_status,
        });
        return minimizeVerification(v);
      } catch (err) {
        if (err instanceof ApiError && err.statusCode === 404) {
          opts.metrics.verifications.inc({
            surface: "public",
            artifact_type: grant.artifactType,
            status: "unavailable",
          });
          throw verificationUnavailable();
        }
        throw err;
      }
    },
  );

  const legacyRoute = "/public/approvals/{approval_id}/verify";
  app.get(
    "/public/approvals/:approval_id/verify",
    {
      schema: {
        params: z.object({ approval_id: z.string() }),
        response: { 200: PublicVerificationResultSchema },
      },
      config: { unsafeInputError: verificationUnavailable },
      ...legacyHooks(
        opts.metrics,
        legacyRoute,
        (req) =>
          `/v1/verification/v2/approvals/${encodeURIComponent((req.params as { approval_id: string }).approval_id)}`,
      ),
    },
    async (req): Promise<PublicVerificationResult> => {
      const nowMs = opts.clock.nowMs();
      const id = req.params.approval_id;
      const isUuid = z.uuid().safeParse(id).success;
      const orgId = isUuid ? await approvalOrgId(opts.db, id) : undefined;
      if (!orgId) {
        opts.metrics.verifications.inc({
          surface: "legacy_public",
          artifact_type: "approval",
          status: "unavailable",
        });
        throw verificationUnavailable();
      }
      const v = await verifyStoredApproval(opts.db, { orgId, approvalId: id, role: "member", nowMs });
      opts.metrics.verifications.inc({
        surface: "legacy_public",
        artifact_type: "approval",
        status: v.overall_status,
      });
      return minimizeVerification(v);
    },
  );
};
