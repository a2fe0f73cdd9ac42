/**
 * The service's server spans (README "Operations → Tracing"): one span per HTTP request, named
 * by its route template (`POST /v1/chains/:chain_id/actions`), a child of the caller's W3C
 * `traceparent`, and active for the whole request so that the decision, receipt and PostgreSQL
 * spans below it join the caller's trace. Probes and the metrics scrape are not traced.
 *
 * Registered only while tracing is on (the hooks then cost nothing when it is off). Attributes:
 * method, route template, status code; never the concrete path or query (bearer tokens, link
 * signatures) nor any header or body.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  context,
  extractContext,
  markError,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  tracingActive,
} from "../telemetry/tracing.js";

/** Tracer of the service's own spans. */
export const serviceTracer = tracer("tollgate-service");

/** Routes that are never traced: probes and the metrics scrape. */
const UNTRACED = new Set(["/healthz", "/readyz", "/metrics"]);

const spans = new WeakMap<FastifyRequest, Span>();

/**
 * Adds the request-span hooks to `app` when tracing is on. Must be registered before any other
 * onRequest hook, so that authentication's queries are children of the request span.
 */
export function registerRequestTracing(app: FastifyInstance): void {
  if (!tracingActive()) return;
  app.addHook("onRequest", (req: FastifyRequest, _reply: FastifyReply, done: () => void) => {
    const route = req.routeOptions.url;
    if (route !== undefined && UNTRACED.has(route)) return done();
    const parent = extractContext(req.headers);
    const span = serviceTracer.startSpan(
      route ? `${req.method} ${route}` : req.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          "http.request.method": req.method,
          "http.route": route ?? "unmatched",
          "url.scheme": "http",
          "network.protocol.version": req.raw.httpVersion,
        },
      },
      parent,
    );
    spans.set(req, span);
    // Everything after this hook (other hooks, the handler, its queries) runs in the span.
    context.with(trace.setSpan(parent, span), done);
  });
  app.addHook("onError", async (req, _reply, err) => {
    const span = spans.get(req);
    const status = (err as { statusCode?: number }).statusCode ?? 500;
    if (span) markError(span, err, status >= 500);
  });
  const end = (req: FastifyRequest, statusCode: number | null) => {
    const span = spans.get(req);
    if (!span) return;
    spans.delete(req);
    if (statusCode === null) {
      span.setAttribute("error.type", "aborted");
    } else {
      span.setAttribute("http.response.status_code", statusCode);
      if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  };
  app.addHook("onResponse", async (req, reply) => end(req, reply.statusCode));
  app.addHook("onRequestAbort", async (req) => end(req, null));
}
