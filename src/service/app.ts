/**
 * The governance service as a Fastify application (STYLE.md: app.ts is the application,
 * server.ts/main.ts the entry point). Everything is injected so tests run it with a real
 * database and a manual clock.
 */

import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from "fastify";
import { hasZodFastifySchemaValidationErrors, validatorCompiler } from "fastify-type-provider-zod";
import { ApiErrorCode } from "../contract/v1/errors.js";
import { MAX_BODY_BYTES } from "../contract/v1/limits.js";
import { VERSION } from "../version.js";
import { ApprovalListener } from "./approvals/listener.js";
import { approvalRoutes } from "./approvals/routes.js";
import { escalateApprovalJob, timeoutApprovalJob } from "./approvals/timers.js";
import { ApprovalWaiters } from "./approvals/waiters.js";
import { API_KEY_PREFIX, ApiKeyCache, authenticate, bearerOf } from "./auth.js";
import { rejectUnsafeInput, requirePrincipal } from "./boundary.js";
import { outcomeRoutes } from "./chains/outcome-routes.js";
import { RecordBatcher } from "./chains/record-batch.js";
import { chainRoutes } from "./chains/routes.js";
import { ChainSnapshotCache } from "./chains/snapshot-cache.js";
import { type Clock, systemClock } from "./clock.js";
import { dashboardPlugin } from "./dashboard/plugin.js";
import type { Database } from "./db/pool.js";
import { ApiError, errorBody } from "./errors.js";
import { healthRoutes } from "./health.js";
import type { WorkloadAuthenticator } from "./identity/token-review.js";
import { type JobHandler, Scheduler } from "./jobs.js";
import { createLogger, type Logger, lazyChildLogger, OneLineRequestLog, safeUrl } from "./logger.js";
import { createMetrics } from "./metrics.js";
import { createOutboxWorker, type SmtpConfig } from "./notify/index.js";
import type { OidcConfig } from "./oidc/settings.js";
import { openApiPlugin, responseSerializerCompiler } from "./openapi.js";
import { adminRoutes } from "./orgs/admin-routes.js";
import { OrgConfigCache } from "./orgs/orgs.js";
import type { ServiceParts } from "./parts.js";
import { ReceiptHmacKeys } from "./receipts/hmac-keys.js";
import { keyRoutes } from "./receipts/key-routes.js";
import {
  isPublicVerificationPath,
  PUBLIC_VERIFICATION_HEADERS,
  verificationUnavailable,
} from "./receipts/public-routes.js";
import { verificationRoutes } from "./receipts/routes.js";
import { SigningKeys } from "./receipts/signing-keys.js";
import { replayRoutes } from "./replay/routes.js";
import { deriveKey } from "./secrets.js";
import { registerRequestTracing } from "./tracing.js";

/** Options of buildService. Secrets: masterKey, adminToken. */
export interface ServiceOptions {
  db: Database;
  /**
   * PostgreSQL URL of `db` (a secret). With it, one extra connection LISTENs for approval
   * changes so that held approval-status requests wake on decisions made by other replicas.
   */
  databaseUrl?: string;
  masterKey: Buffer;
  adminToken: string;
  publicUrl?: string;
  clock?: Clock;
  log?: Logger;
  /** Durable job poll interval in ms; 0 disables the scheduler (tests run jobs by hand). */
  schedulerIntervalMs?: number;
  defaultMetrics?: boolean;
  /** Approval mail delivery (outbox worker, polls every schedulerIntervalMs); unset keeps mail queued. */
  smtp?: SmtpConfig;
  /** Dashboard sign-in (OIDC or the development provider); unset leaves sign-in unconfigured. */
  oidc?: OidcConfig;
  /** Verifies workload tokens (pods' projected service account tokens); unset refuses them. */
  workloads?: WorkloadAuthenticator;
}

/** A built service: the Fastify app, its context, the job handlers and a close function. */
export interface Service {
  app: FastifyInstance;
  ctx: ServiceParts;
  jobHandlers: Record<string, JobHandler>;
  /** Stops the scheduler and closes the HTTP server (not the database). */
  close(): Promise<void>;
}

/** Builds the service application; call `app.listen` to serve. */
export async function buildService(opts: ServiceOptions): Promise<Service> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger({ level: "silent" });
  const approvalWaiters = new ApprovalWaiters();
  const ctx: ServiceParts = {
    db: opts.db,
    clock,
    log,
    configs: new OrgConfigCache(),
    chainSnapshots: new ChainSnapshotCache(),
    recordWriter: new RecordBatcher(opts.db),
    apiKeys: new ApiKeyCache(),
    signingKeys: new SigningKeys(opts.db, opts.masterKey, clock),
    approvalWaiters,
    metrics: createMetrics(opts.db, { defaultMetrics: opts.defaultMetrics, clock, approvalWaiters }),
    receiptHmacKeys: new ReceiptHmacKeys(opts.masterKey),
    linkKey: deriveKey(opts.masterKey, "approval-links"),
    masterKey: opts.masterKey,
    adminToken: opts.adminToken,
    publicUrl: opts.publicUrl ?? "http://localhost:8000",
    workloads: opts.workloads ?? null,
  };
  let shuttingDown = false;
  const app = Fastify({
    loggerInstance: log,
    childLoggerFactory: lazyChildLogger,
    logController: new OneLineRequestLog(log),
    requestTimeout: 120_000,
    connectionTimeout: 130_000,
    keepAliveTimeout: 72_000,
    bodyLimit: MAX_BODY_BYTES,
    trustProxy: false,
    // A path that is not valid percent-encoded UTF-8 (FST_ERR_BAD_URL): the README's error body
    // with TG_ERR_REQUEST, or on the public verification surface its one uniform 404.
    frameworkErrors: (err, req, res) => {
      const reply = res as unknown as FastifyReply;
      if (isPublicVerificationPath(req.url)) {
        const e = verificationUnavailable();
        return reply
          .code(e.statusCode)
          .headers(PUBLIC_VERIFICATION_HEADERS)
          .send(errorBody(e.statusCode, e.code, e.message));
      }
      const status = err.statusCode ?? 400;
      const message =
        err.code === "FST_ERR_BAD_URL" ? "The request path is not valid percent-encoded UTF-8" : err.message;
      return reply
        .code(status)
        .send(errorBody(status, status >= 500 ? ApiErrorCode.INTERNAL : ApiErrorCode.REQUEST, message));
    },
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(responseSerializerCompiler);
  app.decorateRequest("principal", null);

  // First: authentication's queries belong to the request's span.
  registerRequestTracing(app as unknown as FastifyInstance);
  app.addHook("onRequest", async (req) => {
    const secret = bearerOf(req);
    // Routes whose guarded write re-checks the API key may resolve it from memory (ADR 0006).
    req.principal = !secret
      ? null
      : req.routeOptions.config.cachedApiKey && secret.startsWith(API_KEY_PREFIX)
        ? await ctx.apiKeys.resolve(ctx.db, secret, clock.nowMs())
        : await authenticate(ctx.db, secret, ctx.adminToken, clock.nowMs(), ctx.workloads);
    if (secret && !req.principal)
      throw new ApiError(401, ApiErrorCode.UNAUTHENTICATED, "The API key or session is invalid or revoked");
  });
  app.addHook("onRequest", requirePrincipal);
  app.addHook("preValidation", rejectUnsafeInput);
  app.addHook("onResponse", async (req, reply) => {
    ctx.metrics.httpDuration.observe(
      {
        http_request_method: req.method,
        http_route: req.routeOptions.url ?? "unmatched",
        http_response_status_class: `${Math.floor(reply.statusCode / 100)}xx`,
      },
      reply.elapsedTime / 1000,
    );
  });

  app.setErrorHandler((err: FastifyError | ApiError, req, reply) => {
    if (err instanceof ApiError) {
      return reply.code(err.statusCode).send(errorBody(err.statusCode, err.code, err.message, err.details));
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const issues = err.validation.map((v) => {
        const location = err.validationContext ?? "body";
        return {
          path: [location, ...v.instancePath.split("/").filter(Boolean)].join("."),
          pointer: v.instancePath === "/" ? "" : v.instancePath,
          location,
          message: v.message ?? "invalid",
        };
      });
      const first = issues[0]!;
      return reply
        .code(400)
        .send(errorBody(400, ApiErrorCode.VALIDATION, `${first.path}: ${first.message}`, { issues }));
    }
    const status = err.statusCode ?? 500;
    if (status >= 500) {
      req.log.error({ err }, "request failed");
      return reply.code(status).send(errorBody(status, ApiErrorCode.INTERNAL, "Internal error"));
    }
    // The framework's own 4xx (FST_ERR_CTP_INVALID_MEDIA_TYPE, FST_ERR_CTP_INVALID_JSON_BODY, ...)
    // answer with the contract's TG_ERR_REQUEST (README "Errors"), never an FST_ERR_* code.
    // The framework's code stays available as details.framework_code.
    if (err.code?.startsWith("TG_ERR_"))
      return reply.code(status).send(errorBody(status, err.code, err.message));
    const details = err.code ? { framework_code: err.code } : undefined;
    return reply.code(status).send(errorBody(status, ApiErrorCode.REQUEST, err.message, details));
  });
  app.setNotFoundHandler((req, reply) =>
    reply
      .code(404)
      .send(errorBody(404, ApiErrorCode.NOT_FOUND, `Route ${req.method} ${safeUrl(req.url)} not found`)),
  );

  await app.register(openApiPlugin, { version: VERSION });
  // Each plugin gets the parts it declares, nothing more (the master key and admin token stay here).
  const { db, metrics, signingKeys, configs, apiKeys } = ctx;
  await app.register(healthRoutes, { db, metrics, isShuttingDown: () => shuttingDown });
  await app.register(chainRoutes, {
    db,
    clock,
    metrics,
    configs,
    snapshots: ctx.chainSnapshots,
    writer: ctx.recordWriter,
    apiKeys,
    signingKeys,
    approvalWaiters,
    receiptHmacKeys: ctx.receiptHmacKeys,
  });
  await app.register(approvalRoutes, { db, clock, metrics, signingKeys, approvalWaiters });
  await app.register(adminRoutes, { db, clock, configs, apiKeys });
  await app.register(keyRoutes, { db, clock, signingKeys, receiptHmacKeys: ctx.receiptHmacKeys });
  await app.register(outcomeRoutes, { db });
  await app.register(replayRoutes, { db });
  await app.register(verificationRoutes, {
    db,
    clock,
    metrics,
    signingKeys,
    receiptHmacKeys: ctx.receiptHmacKeys,
    publicUrl: ctx.publicUrl,
  });
  await app.register(dashboardPlugin, {
    oidc: opts.oidc,
    ctx: {
      db,
      clock,
      log,
      metrics,
      signingKeys,
      apiKeys,
      approvalWaiters,
      receiptHmacKeys: ctx.receiptHmacKeys,
      linkKey: ctx.linkKey,
      masterKey: ctx.masterKey,
      adminToken: ctx.adminToken,
      publicUrl: ctx.publicUrl,
    },
  });

  const jobHandlers: Record<string, JobHandler> = {
    approval_timeout: (p, now) =>
      timeoutApprovalJob({ db, signingKeys, approvalWaiters }, String(p.approval_id), now),
    approval_escalation: async (p, now) => {
      await escalateApprovalJob(ctx.db, String(p.approval_id), now);
    },
  };
  const scheduler =
    (opts.schedulerIntervalMs ?? 1000) > 0
      ? new Scheduler(ctx.db, {
          clock,
          handlers: jobHandlers,
          intervalMs: opts.schedulerIntervalMs ?? 1000,
          log,
        })
      : null;
  scheduler?.start();
  const outbox =
    opts.smtp && (opts.schedulerIntervalMs ?? 1000) > 0
      ? createOutboxWorker(ctx, opts.smtp, { intervalMs: opts.schedulerIntervalMs ?? 1000 })
      : null;
  outbox?.start();
  const listener =
    opts.databaseUrl && opts.db.kind === "postgres"
      ? new ApprovalListener(
          opts.databaseUrl,
          {
            onNotify: (chainId) => ctx.approvalWaiters.wake(chainId),
            onReconnect: () => ctx.approvalWaiters.wakeAll(),
          },
          log,
        )
      : null;
  await listener?.start();

  return {
    app: app as unknown as FastifyInstance,
    ctx,
    jobHandlers,
    async close() {
      shuttingDown = true;
      // Held approval-status requests answer now with the current status, before draining.
      ctx.approvalWaiters.close();
      await scheduler?.stop();
      await outbox?.stop();
      await app.close();
      await listener?.close();
    },
  };
}
