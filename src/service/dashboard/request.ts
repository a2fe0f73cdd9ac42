/**
 * Per-request helpers of the dashboard: the viewer behind the session cookie, role checks that
 * throw ApiErrors (rendered as pages by the dashboard's error handler), form parsing with zod
 * and the CSRF check, and page responses with safe headers.
 */

import type { FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import { ApiErrorCode } from "../../contract/v1/errors.js";
import { authenticate, SESSION_COOKIE, SESSION_PREFIX } from "../auth.js";
import { ApiError, forbidden, unauthorized } from "../errors.js";
import { orgById } from "../orgs/orgs.js";
import type { ServiceParts } from "../parts.js";
import type { Csrf } from "./csrf.js";
import type { Viewer } from "./layout.js";

/** The service parts the dashboard and sign-in use (not the recording hot path's caches). */
export type DashboardParts = Pick<
  ServiceParts,
  | "db"
  | "clock"
  | "log"
  | "metrics"
  | "signingKeys"
  | "apiKeys"
  | "approvalWaiters"
  | "receiptHmacKeys"
  | "linkKey"
  | "masterKey"
  | "adminToken"
  | "publicUrl"
>;

/** What every dashboard route needs. */
export interface DashboardDeps {
  ctx: DashboardParts;
  csrf: Csrf;
  /** The embedded development identity provider is on (pages show the banner). */
  devOidc: boolean;
  /** Cookies get the Secure attribute (public URL is https). */
  secureCookies: boolean;
}

declare module "fastify" {
  interface FastifyRequest {
    /** The signed-in dashboard user, set by the dashboard's onRequest hook. */
    viewer: Viewer | null;
  }
}

/**
 * Resolves the viewer: a user principal from the Authorization header (set by the service's
 * hook) or else from the tg_session cookie. API keys and the service admin token are not
 * dashboard users.
 */
export async function loadViewer(req: FastifyRequest, deps: DashboardDeps): Promise<Viewer | null> {
  const { ctx } = deps;
  let p = req.principal;
  if (!p) {
    const cookie = req.cookies?.[SESSION_COOKIE];
    if (cookie?.startsWith(SESSION_PREFIX)) {
      p = await authenticate(ctx.db, cookie, ctx.adminToken, ctx.clock.nowMs());
      req.principal = p;
    }
  }
  if (p?.kind !== "user") return null;
  const org = await orgById(ctx.db, p.orgId).catch(() => null);
  if (!org) return null;
  return {
    email: p.email,
    orgId: p.orgId,
    orgSlug: org.slug,
    orgName: org.display_name,
    roles: p.roles,
    sessionId: p.sessionId,
    csrf: deps.csrf.token(p.sessionId),
    canDecide: p.roles.includes("approver") || p.roles.includes("admin"),
    isAdmin: p.roles.includes("admin"),
  };
}

/** The viewer, or a 401 (GET pages redirect to sign-in). */
export function requireViewer(req: FastifyRequest): Viewer {
  if (!req.viewer) {
    if (req.principal) throw forbidden("The dashboard is for people who sign in; API keys cannot open it.");
    throw unauthorized("Please sign in.");
  }
  return req.viewer;
}

/** The viewer when an admin, else 403. */
export function requireAdmin(req: FastifyRequest): Viewer {
  const v = requireViewer(req);
  if (!v.isAdmin) throw forbidden("Only organization admins can open this page.");
  return v;
}

/** The viewer when an approver or admin, else 403. */
export function requireDecider(req: FastifyRequest): Viewer {
  const v = requireViewer(req);
  if (!v.canDecide) throw forbidden("Only approvers and admins can decide approvals.");
  return v;
}

/**
 * Validates a form body with `schema` after checking its CSRF token against the viewer's
 * session. Throws 403 on a bad token and 400 naming the field on invalid input.
 */
export function parseForm<T>(
  req: FastifyRequest,
  deps: DashboardDeps,
  viewer: Viewer,
  schema: z.ZodType<T>,
): T {
  const body = (req.body ?? {}) as Record<string, unknown>;
  if (!deps.csrf.check(viewer.sessionId, body._csrf)) {
    throw new ApiError(
      403,
      ApiErrorCode.CSRF,
      "The form expired or did not come from this site. Reload the page and try again.",
    );
  }
  return parseFields(body, schema);
}

/** Validates form fields (or a query) with `schema`; throws 400 naming the first invalid field. */
export function parseFields<T>(fields: unknown, schema: z.ZodType<T>): T {
  const parsed = schema.safeParse(fields);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join(".") || "form";
    throw new ApiError(400, ApiErrorCode.VALIDATION, `${field}: ${issue.message}`);
  }
  return parsed.data;
}

/** Sends an HTML page; pages are never cached (they show secrets once and per-user data). */
export function sendHtml(reply: FastifyReply, body: string, status = 200): FastifyReply {
  return reply
    .code(status)
    .header("content-type", "text/html; charset=utf-8")
    .header("cache-control", "no-store")
    .send(body);
}

/** A safe local path to return to after sign-in, or the approvals page. */
export function safeReturnTo(value: unknown): string {
  if (typeof value !== "string") return "/dashboard/approvals";
  if (!/^\/(dashboard)(\/|\?|$)/.test(value) || value.includes("\\") || value.includes("//"))
    return "/dashboard/approvals";
  return value.slice(0, 2000);
}
