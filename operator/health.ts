/**
 * Liveness, readiness and Prometheus metrics over plain HTTP (probes and scraping stay inside the
 * cluster network): GET /healthz (the process serves), GET /readyz (503 with the unmet checks
 * until the webhook serves and the caches are synced), GET /metrics.
 */
import Fastify, { type FastifyInstance } from "fastify";
import type { Registry } from "prom-client";

/** Options of {@link startHealthServer}. */
export interface HealthServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  registry: Registry;
  /** Names of unmet readiness checks; empty when ready. */
  unready: () => string[];
}

/** Starts the health server; resolves with the app and the bound port. */
export async function startHealthServer(
  o: HealthServerOptions,
): Promise<{ app: FastifyInstance; port: number }> {
  const app = Fastify({ logger: false, requestTimeout: 10_000, keepAliveTimeout: 65_000 });
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_req, reply) => {
    const unmet = o.unready();
    if (unmet.length) return reply.code(503).send({ status: "not ready", unmet });
    return { status: "ready" };
  });
  app.get("/metrics", async (_req, reply) => {
    reply.header("content-type", o.registry.contentType);
    return o.registry.metrics();
  });
  await app.listen({ host: o.host, port: o.port });
  const address = app.server.address();
  return { app, port: typeof address === "object" && address ? address.port : o.port };
}
