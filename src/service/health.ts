/** Liveness, readiness and Prometheus metrics. */

import type { FastifyPluginAsync } from "fastify";
import { HealthSchema, MetricsTextSchema } from "../contract/v1/responses.js";
import type { Database } from "./db/pool.js";
import type { Metrics } from "./metrics.js";

/** What the health routes use. */
export interface HealthRouteDeps {
  db: Database;
  metrics: Metrics;
  isShuttingDown: () => boolean;
}

/** GET /healthz (liveness), GET /readyz (readiness: the database answers), GET /metrics (Prometheus). */
export const healthRoutes: FastifyPluginAsync<HealthRouteDeps> = async (app, opts) => {
  app.get("/healthz", { schema: { response: { 200: HealthSchema } } }, async () => ({ status: "ok" }));
  app.get(
    "/readyz",
    { schema: { response: { 200: HealthSchema, 503: HealthSchema } } },
    async (_req, reply) => {
      if (opts.isShuttingDown()) return reply.code(503).send({ status: "shutting_down" });
      try {
        await opts.db.query("SELECT 1");
        return { status: "ready" };
      } catch {
        return reply.code(503).send({ status: "database_unavailable" });
      }
    },
  );
  app.get(
    "/metrics",
    {
      schema: {
        response: {
          200: {
            description: "Prometheus text exposition format",
            content: { "text/plain": { schema: MetricsTextSchema } },
          },
        },
      },
    },
    async (_req, reply) => {
      reply.header("content-type", opts.metrics.registry.contentType);
      return opts.metrics.registry.metrics();
    },
  );
};
