/**
 * Entry point: `npm start` / `tollgate-service`. Reads configuration, opens PostgreSQL or
 * embedded PGlite, migrates, serves, and shuts down gracefully on SIGTERM/SIGINT.
 */
import path from "node:path";
import { CommanderError } from "commander";
import { startTracing, TelemetryConfigError } from "../telemetry/tracing.js";
import { buildService } from "./app.js";
import { ConfigError, describeConfig, loadConfig } from "./config.js";
import { migrate } from "./db/migrate.js";
import { type Database, openPglite, openPostgres } from "./db/pool.js";
import { kubeApiServer, WorkloadAuthenticator } from "./identity/token-review.js";
import { createLogger } from "./logger.js";
import { applyKeyConfig } from "./receipts/key-config.js";

async function main(): Promise<void> {
  let config: Awaited<ReturnType<typeof loadConfig>>;
  try {
    config = await loadConfig(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode);
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger({ level: config.logLevel });
  log.info({ config: describeConfig(config) }, "starting Tollgate governance service");
  const tracing = await startTracing({ serviceName: "tollgate-service", log }).catch((err: unknown) => {
    if (!(err instanceof TelemetryConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  });
  const db: Database = config.databaseUrl
    ? await openPostgres(config.databaseUrl, config.databasePoolMax)
    : await openPglite({
        dataDir: path.join(config.dataDir, "pglite"),
        socketDir: config.dataDir,
        lowMemory: true,
      });
  const applied = await migrate(db);
  log.info({ applied, database: db.kind }, "database ready");
  const identity = config.workloadIdentity;
  const workloads = identity
    ? new WorkloadAuthenticator({ api: await kubeApiServer(identity.kubeconfig), ...identity })
    : undefined;
  const service = await buildService({
    workloads,
    db,
    databaseUrl: config.databaseUrl,
    masterKey: config.masterKey,
    adminToken: config.adminToken,
    publicUrl: config.publicUrl,
    log,
    schedulerIntervalMs: config.schedulerIntervalMs,
    smtp: config.smtp,
    oidc: config.oidc,
  });
  await applyKeyConfig(db, service.ctx, config.keys, service.ctx.clock.nowMs(), log);
  if (!config.smtp) log.warn("SMTP_HOST is not set: approval e-mails stay queued in the outbox");
  if (!config.oidc) log.warn("dashboard sign-in is off: set OIDC_ISSUER_URL or TOLLGATE_DEV_OIDC=true");
  await service.app.listen({ port: config.port, host: config.host });
  if (!process.env.TOLLGATE_ADMIN_TOKEN && !process.env.TOLLGATE_ADMIN_TOKEN_FILE) {
    log.info(
      { file: path.join(config.dataDir, "admin-token") },
      "service admin token (generated for development) is in this file",
    );
  }
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down: draining requests");
    const force = setTimeout(() => {
      log.error("shutdown took longer than 25 s; exiting");
      process.exit(1);
    }, 25_000);
    force.unref();
    await service.close();
    await db.close();
    await tracing.shutdown();
    log.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((err) => {
  process.stderr.write(`tollgate: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
