/**
 * Marking of legacy compatibility routes (spec: "Versioning" 2–3): every response, errors
 * included, carries `Deprecation: true` and a `Link` to the successor with
 * rel="successor-version", and every request is counted in
 * tollgate_legacy_route_requests_total{route} (telemetry the spec requires before removal).
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Metrics } from "../metrics.js";

/** Route hooks that mark `route` (a path template, the metric label) as legacy. */
export function legacyHooks(metrics: Metrics, route: string, successor: (req: FastifyRequest) => string) {
  return {
    onSend: async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
      reply.header("deprecation", "true");
      reply.header("link", `<${successor(req)}>; rel="successor-version"`);
      return payload;
    },
    onResponse: async () => {
      metrics.legacyRoutes.inc({ route });
    },
  };
}
