/**
 * /dashboard (redirects to the approvals page) and the dashboard's stylesheet and script
 * (cached for an hour; the pages reference them, never inline style or script).
 */
import type { FastifyInstance } from "fastify";
import { SCRIPT, STYLESHEET } from "../assets.js";
import type { DashboardDeps } from "../request.js";

/** Registers GET /dashboard and GET /dashboard/static/tollgate.{css,js}. */
export function staticRoutes(app: FastifyInstance, _deps: DashboardDeps): void {
  app.get("/dashboard", (_req, reply) => reply.redirect("/dashboard/approvals", 303));
  app.get("/dashboard/static/tollgate.css", (_req, reply) =>
    reply
      .header("content-type", "text/css; charset=utf-8")
      .header("cache-control", "public, max-age=3600")
      .send(STYLESHEET),
  );
  app.get("/dashboard/static/tollgate.js", (_req, reply) =>
    reply
      .header("content-type", "text/javascript; charset=utf-8")
      .header("cache-control", "public, max-age=3600")
      .send(SCRIPT),
  );
}
