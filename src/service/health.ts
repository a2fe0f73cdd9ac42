/** Liveness, readiness and Prometheus metrics. */
import type { FastifyPluginAsync } from "fastify";

export const healthRoutes: FastifyPluginAsync<{ isShuttingDown: () => boolean }> = async (app, opts) => {
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_req, reply) => {
    if (opts.isShuttingDown()) return reply.code(503).send({ status: "shutting_down" });
    try {
      await app.tg.db.query("SELECT 1");
      return { status: "ready" };
    } catch {
      return reply.code(503).send({ status: "database_unavailable" });
    }
  });
  app.get("/metrics", async (_req, reply) => {
    reply.header("content-type", app.tg.metrics.registry.contentType);
    return app.tg.metrics.registry.metrics();
  });
};
