/**
 * The approver's side of the service as one Fastify plugin (register it once in app.ts):
 * server-rendered dashboard pages under /dashboard, sign-in under /auth, and — only when
 * TOLLGATE_DEV_OIDC=true — the development identity provider under /dev-oidc.
 *
 * Cookies and form bodies are parsed only inside this context; the session cookie is honoured
 * only here (the JSON API under /v1 takes bearer credentials only, so it needs no CSRF
 * defence). Every response carries a strict Content-Security-Policy (no inline script or
 * style), no-referrer (signed links never leak through Referer), and frame denial.
 */
import cookie from "@fastify/cookie";
import formbody from "@fastify/formbody";
import type { FastifyError, FastifyInstance } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { ApiError } from "../errors.js";
import { OidcClient } from "../oidc/client.js";
import { devOidcProvider } from "../oidc/dev-provider.js";
import { loopbackFetch } from "../oidc/loopback-fetch.js";
import { authRoutes } from "../oidc/routes.js";
import { type OidcConfig, resolveOidc } from "../oidc/settings.js";
import { Csrf } from "./csrf.js";
import { page } from "./layout.js";
import { errorTitle, messageBody } from "./pages/message.js";
import { type DashboardDeps, type DashboardParts, loadViewer, sendHtml } from "./request.js";
import { dashboardRoutes } from "./routes/index.js";

/** Options of the dashboard plugin. */
export interface DashboardOptions {
  /** Sign-in settings; undefined leaves sign-in unconfigured (pages explain how to set it). */
  oidc?: OidcConfig;
  /** The service's parts the dashboard uses. */
  ctx: DashboardParts;
}

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
};

/** Registers the dashboard, sign-in and (optionally) the development provider on `app`. */
export async function dashboardPlugin(app: FastifyInstance, opts: DashboardOptions): Promise<void> {
  const { ctx } = opts;
  const resolved = opts.oidc ? resolveOidc(opts.oidc, ctx.publicUrl, ctx.masterKey) : null;
  const deps: DashboardDeps = {
    ctx,
    csrf: new Csrf(ctx.masterKey),
    devOidc: resolved?.dev ?? false,
    secureCookies: ctx.publicUrl.startsWith("https:"),
  };
  const client = resolved
    ? new OidcClient(
        resolved,
        resolved.dev ? { fetch: loopbackFetch(ctx.publicUrl, () => app.server.address()) } : {},
      )
    : null;

  await app.register(async (web) => {
    await web.register(cookie);
    await web.register(formbody, { bodyLimit: 64 * 1024 });
    web.decorateRequest("viewer", null);
    web.addHook("onRequest", async (req) => {
      req.viewer = await loadViewer(req, deps);
    });
    web.addHook("onSend", async (_req, reply, payload) => {
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) reply.header(k, v);
      return payload;
    });
    web.setErrorHandler((err: FastifyError | ApiError, req, reply) => {
      let status =
        err instanceof ApiError
          ? err.statusCode
          : hasZodFastifySchemaValidationErrors(err)
            ? 400
            : (err.statusCode ?? 500);
      if (status < 400) status = 500;
      if (status === 401 && req.method === "GET") {
        return reply.redirect(`/auth/login?return_to=${encodeURIComponent(req.url)}`, 303);
      }
      if (status >= 500) req.log.error({ err }, "dashboard request failed");
      const text =
        status >= 500 ? "The service could not complete this request. Try again in a moment." : err.message;
      const actions =
        status === 401 || status === 403
          ? [{ href: `/auth/login?switch=1`, label: "Sign in", primary: true }]
          : [{ href: "/dashboard/approvals", label: "Back to approvals", primary: true }];
      return sendHtml(
        reply,
        page({
          title: errorTitle(status),
          viewer: req.viewer ?? null,
          devOidc: deps.devOidc,
          body: messageBody({ title: errorTitle(status), text, tone: "bad", actions }),
        }),
        status,
      );
    });
    await dashboardRoutes(web, deps);
    await authRoutes(web, deps, client);
    web.get("/dashboard/*", (req, reply) =>
      sendHtml(
        reply,
        page({
          title: "Not found",
          viewer: req.viewer ?? null,
          devOidc: deps.devOidc,
          body: messageBody({
            title: "Not found",
            text: "There is no such page.",
            tone: "bad",
            actions: [{ href: "/dashboard/approvals", label: "Back to approvals", primary: true }],
          }),
        }),
        404,
      ),
    );
  });

  if (resolved?.dev) {
    await app.register(async (dev) => {
      await devOidcProvider(dev, { ctx, client: resolved, users: opts.oidc?.dev?.users ?? [] });
    });
  }
}
