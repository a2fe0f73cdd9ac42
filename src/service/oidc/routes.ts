/**
 * Sign-in and sign-out of the dashboard (spec: "Authentication" 2, 6):
 * GET /auth/login?return_to=… redirects to the identity provider (code flow + PKCE);
 * GET /auth/callback finishes it, picks the organization and sets the tg_session cookie
 * (HttpOnly, SameSite=Lax, Path=/, Secure when the public URL is https);
 * POST /auth/select-org lets a person with several memberships choose one;
 * POST /auth/logout (CSRF-protected) revokes the session; GET /auth/signed-out confirms it.
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import { z } from "zod";
import { SESSION_COOKIE } from "../auth.js";
import { html } from "../dashboard/html.js";
import { csrfField, page } from "../dashboard/layout.js";
import { messageBody } from "../dashboard/pages/message.js";
import { type DashboardDeps, safeReturnTo, sendHtml } from "../dashboard/request.js";
import { LoginStateSchema, type OidcClient, SignInError } from "./client.js";
import {
  chooseOrganization,
  endDashboardSession,
  type Membership,
  membershipsOf,
  SESSION_TTL_SECONDS,
  startDashboardSession,
} from "./membership.js";
import { openState, sealState } from "./sealed.js";

const LOGIN_COOKIE = "tg_login";
const CHOICE_COOKIE = "tg_org_choice";
const LOGIN_TTL_MS = 10 * 60_000;

const ChoiceSchema = z.object({
  email: z.string(),
  orgIds: z.array(z.string()),
  returnTo: z.string(),
  nonce: z.string(),
});

/** Registers the /auth routes. `client` is null when sign-in is not configured. */
export async function authRoutes(
  app: FastifyInstance,
  deps: DashboardDeps,
  client: OidcClient | null,
): Promise<void> {
  const { ctx } = deps;
  const cookieBase = { httpOnly: true, sameSite: "lax" as const, secure: deps.secureCookies };
  const show = (
    reply: FastifyReply,
    title: string,
    text: string,
    status: number,
    tone: "bad" | "info" | "ok" = "bad",
  ) =>
    sendHtml(
      reply,
      page({
        title,
        viewer: null,
        devOidc: deps.devOidc,
        body: messageBody({
          title,
          text,
          tone,
          actions: [{ href: "/auth/login?switch=1", label: "Sign in", primary: true }],
        }),
      }),
      status,
    );

  async function signIn(reply: FastifyReply, membership: Membership, email: string, returnTo: string) {
    const s = await startDashboardSession(ctx.db, { membership, email, clock: ctx.clock });
    ctx.log.info({ organization: membership.slug, roles: s.roles }, "dashboard sign-in");
    reply.setCookie(SESSION_COOKIE, s.token, { ...cookieBase, path: "/", maxAge: SESSION_TTL_SECONDS });
    return reply.redirect(safeReturnTo(returnTo), 303);
  }

  app.get("/auth/login", async (req, reply) => {
    const q = req.query as Record<string, unknown>;
    const returnTo = safeReturnTo(q.return_to);
    if (!client) {
      return show(
        reply,
        "Sign-in is not configured",
        "Set OIDC_ISSUER_URL, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET to sign in with your identity provider, or TOLLGATE_DEV_OIDC=true for the local development provider.",
        503,
        "info",
      );
    }
    if (req.viewer && q.switch === undefined) return reply.redirect(returnTo, 303);
    try {
      const { url, state } = await client.start(returnTo, { forceLogin: q.switch !== undefined });
      reply.setCookie(
        LOGIN_COOKIE,
        sealState(ctx.masterKey, "login", state, ctx.clock.nowMs() + LOGIN_TTL_MS),
        {
          ...cookieBase,
          path: "/auth",
          maxAge: LOGIN_TTL_MS / 1000,
        },
      );
      return reply.redirect(url, 303);
    } catch (err) {
      if (!(err instanceof SignInError)) throw err;
      ctx.log.error({ err: err.cause ?? err, issuer: client.issuer }, "OIDC discovery failed");
      return show(reply, "Sign-in is unavailable", err.message, 502);
    }
  });

  app.get("/auth/callback", async (req, reply) => {
    if (!client)
      return show(reply, "Sign-in is not configured", "No identity provider is configured.", 503, "info");
    const saved = openState(
      ctx.masterKey,
      "login",
      req.cookies[LOGIN_COOKIE],
      ctx.clock.nowMs(),
      LoginStateSchema,
    );
    reply.clearCookie(LOGIN_COOKIE, { ...cookieBase, path: "/auth" });
    if (!saved) {
      return show(
        reply,
        "Sign-in expired",
        "The sign-in took too long or was started in another browser. Please sign in again.",
        400,
      );
    }
    let identity: Awaited<ReturnType<OidcClient["finish"]>>;
    try {
      identity = await client.finish(req.url.split("?")[1] ?? "", saved);
    } catch (err) {
      if (!(err instanceof SignInError)) throw err;
      ctx.log.warn({ err: err.cause ?? err }, "OIDC callback refused");
      return show(reply, "Sign-in failed", err.message, 400);
    }
    const memberships = await membershipsOf(ctx.db, identity.email);
    const choice = chooseOrganization(memberships, identity.tollgateOrg);
    if (choice.kind === "refused") {
      ctx.log.info({ reason: "no membership" }, "dashboard sign-in refused");
      return show(reply, "No access", `${choice.reason} (signed in as ${identity.email})`, 403);
    }
    if (choice.kind === "chosen") return signIn(reply, choice.membership, identity.email, saved.returnTo);
    const nonce = saved.state;
    reply.setCookie(
      CHOICE_COOKIE,
      sealState(
        ctx.masterKey,
        "org-choice",
        {
          email: identity.email,
          orgIds: choice.options.map((m) => m.orgId),
          returnTo: saved.returnTo,
          nonce,
        },
        ctx.clock.nowMs() + LOGIN_TTL_MS,
      ),
      { ...cookieBase, path: "/auth", maxAge: LOGIN_TTL_MS / 1000 },
    );
    const body = html`<section class="card center-card" aria-labelledby="choose">
<h1 id="choose">Choose an organization</h1>
<p>You (${identity.email}) belong to several organizations. Which one do you want to open?</p>
<form method="post" action="/auth/select-org">${csrfField(deps.csrf.token(`org-choice:${nonce}`))}
<fieldset><legend>Organization</legend><ul class="userlist">${choice.options.map(
      (m, i) =>
        html`<li><label class="choice"><input type="radio" name="org_id" value="${m.orgId}" required${i === 0 ? html` checked` : ""}> ${m.displayName ?? m.slug} <span class="muted small">(${m.roles.join(", ")})</span></label></li>`,
    )}</ul></fieldset>
<div class="actions"><button class="primary" type="submit">Continue</button></div>
</form></section>`;
    return sendHtml(
      reply,
      page({ title: "Choose an organization", viewer: null, devOidc: deps.devOidc, body }),
    );
  });

  app.post("/auth/select-org", async (req, reply) => {
    const saved = openState(
      ctx.masterKey,
      "org-choice",
      req.cookies[CHOICE_COOKIE],
      ctx.clock.nowMs(),
      ChoiceSchema,
    );
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (!saved || !deps.csrf.check(`org-choice:${saved.nonce}`, body._csrf)) {
      return show(reply, "Sign-in expired", "Please sign in again.", 400);
    }
    reply.clearCookie(CHOICE_COOKIE, { ...cookieBase, path: "/auth" });
    const orgId = typeof body.org_id === "string" ? body.org_id : "";
    const m = saved.orgIds.includes(orgId)
      ? (await membershipsOf(ctx.db, saved.email)).find((x) => x.orgId === orgId)
      : undefined;
    if (!m) return show(reply, "No access", "You are not a member of that organization.", 403);
    return signIn(reply, m, saved.email, saved.returnTo);
  });

  app.post("/auth/logout", async (req, reply) => {
    const v = req.viewer;
    if (v) {
      const body = (req.body ?? {}) as Record<string, unknown>;
      if (!deps.csrf.check(v.sessionId, body._csrf)) {
        return show(reply, "Sign-out failed", "The form expired. Reload the page and sign out again.", 403);
      }
      await endDashboardSession(ctx.db, v.sessionId, ctx.clock.nowMs());
    }
    reply.clearCookie(SESSION_COOKIE, { ...cookieBase, path: "/" });
    return reply.redirect("/auth/signed-out", 303);
  });

  app.get("/auth/signed-out", (_req, reply) =>
    sendHtml(
      reply,
      page({
        title: "Signed out",
        viewer: null,
        devOidc: deps.devOidc,
        body: messageBody({
          title: "You are signed out",
          text: "Your dashboard session has ended.",
          tone: "ok",
          actions: [{ href: "/auth/login?switch=1", label: "Sign in again", primary: true }],
        }),
      }),
    ),
  );
}
