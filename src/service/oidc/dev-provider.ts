/**
 * DEVELOPMENT ONLY: an embedded OpenID provider (`oidc-provider`) mounted at /dev-oidc, so the
 * local demo can sign in without an external identity provider. It is off unless
 * TOLLGATE_DEV_OIDC=true, refuses NODE_ENV=production (config.ts), logs a warning at start, and
 * marks its pages and every dashboard page with a "development only" banner.
 *
 * Its users are the seeded addresses of TOLLGATE_DEV_OIDC_USERS plus everyone the service
 * knows (members and ApproverTeam approvers); anyone may sign in as any of them without a
 * password. Roles still come from the service's membership (oidc/membership.ts). State
 * (sessions, codes) is in memory; signing keys are generated at start.
 */
import { createHmac } from "node:crypto";
import formbody from "@fastify/formbody";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { exportJWK, generateKeyPair } from "jose";
import type { Configuration, KoaContextWithOIDC } from "oidc-provider";
import { z } from "zod";
import { Csrf } from "../dashboard/csrf.js";
import { html } from "../dashboard/html.js";
import { page } from "../dashboard/layout.js";
import type { DashboardParts } from "../dashboard/request.js";
import { sendHtml } from "../dashboard/request.js";
import { deriveKey } from "../secrets.js";
import { DEV_OIDC_PATH, type ResolvedOidc } from "./settings.js";

/** A person the development provider offers on its sign-in page. */
interface DevUser {
  email: string;
  name: string | null;
  where: string[];
}

/** Everyone the development provider lists: seeded addresses, members, team approvers. */
async function devUsers(ctx: DashboardParts, seeded: string[]): Promise<DevUser[]> {
  const users = new Map<string, DevUser>();
  const add = (email: string, name: string | null, where: string) => {
    const u = users.get(email) ?? { email, name: null, where: [] };
    u.name ??= name;
    if (where && !u.where.includes(where)) u.where.push(where);
    users.set(email, u);
  };
  for (const e of seeded) add(e, null, "");
  const members = await ctx.db.query(
    "SELECT m.email, m.display_name, m.roles, o.slug FROM members m JOIN organizations o ON o.id = m.org_id ORDER BY m.email",
  );
  for (const r of members.rows)
    add(r.email, r.display_name, `${r.slug}: ${(r.roles as string[]).join(", ")}`);
  const teams = await ctx.db.query(
    "SELECT t.name, t.approvers, t.fallback_approvers, o.slug FROM approver_teams t JOIN organizations o ON o.id = t.org_id",
  );
  for (const t of teams.rows) {
    for (const a of t.approvers as { email: string; name?: string }[])
      add(a.email, a.name ?? null, `${t.slug}: team ${t.name}`);
    for (const f of t.fallback_approvers as string[]) add(f, null, `${t.slug}: fallback in team ${t.name}`);
  }
  return [...users.values()].sort((a, b) => a.email.localeCompare(b.email));
}

/**
 * Registers the development provider under /dev-oidc for the dashboard client `client`.
 * Call inside its own encapsulated context (it removes body parsers for the provider routes).
 */
export async function devOidcProvider(
  app: FastifyInstance,
  opts: { ctx: DashboardParts; client: ResolvedOidc; users: string[] },
): Promise<void> {
  const { ctx, client } = opts;
  ctx.log.warn(
    { issuer: client.issuerUrl },
    "DEVELOPMENT ONLY: the embedded OpenID provider is enabled (TOLLGATE_DEV_OIDC=true); anyone can sign in as any listed user without a password. Never enable it in production.",
  );
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: "dev-oidc-1", alg: "RS256", use: "sig" };
  const cookieKey = createHmac("sha256", deriveKey(ctx.masterKey, "session"))
    .update("dev-oidc-cookies")
    .digest("base64url");
  const configuration: Configuration = {
    clients: [
      {
        client_id: client.clientId,
        client_secret: client.clientSecret ?? undefined,
        redirect_uris: [client.redirectUrl],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: client.clientSecret ? "client_secret_basic" : "none",
      },
    ],
    jwks: { keys: [jwk as never] },
    cookies: { keys: [cookieKey] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `${DEV_OIDC_PATH}/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    conformIdTokenClaims: false,
    ttl: {
      Interaction: 600,
      Session: 8 * 3600,
      Grant: 8 * 3600,
      AccessToken: 600,
      IdToken: 600,
      AuthorizationCode: 60,
    },
    findAccount: async (_koa, sub) => {
      const email = sub.toLowerCase();
      const { rows } = await ctx.db.query(
        "SELECT display_name FROM members WHERE email = $1 AND display_name IS NOT NULL LIMIT 1",
        [email],
      );
      return {
        accountId: email,
        claims: async () => ({
          sub: email,
          email,
          email_verified: true,
          ...(rows[0] && { name: rows[0].display_name }),
        }),
      };
    },
    // First-party client: grant the requested scopes without a consent screen.
    loadExistingGrant: async (koa: KoaContextWithOIDC) => {
      const oidc = koa.oidc;
      const grantId = oidc.result?.consent?.grantId ?? oidc.session?.grantIdFor(oidc.client!.clientId);
      if (grantId) return oidc.provider.Grant.find(grantId);
      const grant = new oidc.provider.Grant({
        clientId: oidc.client!.clientId,
        accountId: oidc.session!.accountId!,
      });
      grant.addOIDCScope("openid email profile");
      await grant.save();
      return grant;
    },
    renderError: async (koa, out) => {
      koa.type = "html";
      koa.body = page({
        title: "Development sign-in error",
        viewer: null,
        devOidc: true,
        body: html`<section class="card center-card"><h1>Sign-in error</h1><div class="notice bad">${String(out.error)}: ${String(out.error_description ?? "")}</div>
<div class="actions"><a class="button primary" href="/auth/login?switch=1">Start again</a></div></section>`,
      });
    },
  };
  // Imported here so that oidc-provider is loaded only when the development provider is on.
  const { default: Provider } = await import("oidc-provider");
  const provider = new Provider(client.issuerUrl, configuration);
  if (new URL(client.issuerUrl).protocol === "https:") provider.proxy = true;
  const callback = provider.callback();
  const csrf = new Csrf(ctx.masterKey);

  // The provider's own endpoints: the raw request goes to oidc-provider (Koa), which parses
  // its own bodies; mount semantics as Express's (originalUrl keeps the prefix).
  await app.register(async (raw) => {
    raw.removeAllContentTypeParsers();
    raw.addContentTypeParser("*", (_req, _payload, done) => done(null));
    const forward = (req: FastifyRequest, reply: FastifyReply) => {
      reply.hijack();
      const r = req.raw as typeof req.raw & { originalUrl?: string };
      r.originalUrl = r.url;
      r.url = r.url!.slice(DEV_OIDC_PATH.length) || "/";
      callback(r, reply.raw);
    };
    raw.all(`${DEV_OIDC_PATH}/*`, forward);
  });

  // The sign-in page (the provider's "interaction"): pick a user.
  await app.register(async (ui) => {
    await ui.register(formbody);
    const Uid = z.string().regex(/^[A-Za-z0-9_-]{10,100}$/);

    ui.get(`${DEV_OIDC_PATH}/interaction/:uid`, async (req, reply) => {
      const uid = Uid.parse((req.params as Record<string, string>).uid);
      const details = await provider.interactionDetails(req.raw, reply.raw).catch(() => null);
      if (!details || details.uid !== uid) {
        return sendHtml(
          reply,
          page({
            title: "Development sign-in",
            viewer: null,
            devOidc: true,
            body: html`<section class="card center-card"><h1>Sign-in expired</h1><div class="notice bad">This development sign-in request expired.</div><div class="actions"><a class="button primary" href="/auth/login?switch=1">Start again</a></div></section>`,
          }),
          400,
        );
      }
      const users = await devUsers(ctx, opts.users);
      const token = csrf.token(`dev-oidc:${uid}`);
      const body = html`<section class="card center-card" aria-labelledby="dev-title">
<h1 id="dev-title">Development sign-in</h1>
<div class="notice warn" role="note"><strong>Development only.</strong> This embedded identity provider signs anyone in as any listed person without a password. It is enabled by TOLLGATE_DEV_OIDC=true and must never run in production.</div>
<form method="post" action="${DEV_OIDC_PATH}/interaction/${uid}/login">
<input type="hidden" name="_csrf" value="${token}">
<h2 class="small muted">Sign in as</h2>
${
  users.length === 0
    ? html`<p class="muted">No users yet: add members through the admin API or list addresses in TOLLGATE_DEV_OIDC_USERS.</p>`
    : html`<ul class="userlist">${users.map(
        (u) =>
          html`<li><button class="secondary" type="submit" name="email" value="${u.email}"><span><strong>${u.name ?? u.email}</strong>${u.name ? html`<br><span class="small muted">${u.email}</span>` : ""}</span><span class="small muted">${u.where.join(" · ")}</span></button></li>`,
      )}</ul>`
}
</form>
<form method="post" action="${DEV_OIDC_PATH}/interaction/${uid}/login">
<input type="hidden" name="_csrf" value="${token}">
<label class="field" for="dev-email">Or any e-mail address</label>
<div class="inline"><input type="email" id="dev-email" name="email" required autocomplete="off"><button class="primary" type="submit">Sign in</button></div>
</form>
<form method="post" action="${DEV_OIDC_PATH}/interaction/${uid}/abort"><input type="hidden" name="_csrf" value="${token}"><div class="actions"><button class="secondary" type="submit">Cancel</button></div></form>
</section>`;
      return sendHtml(reply, page({ title: "Development sign-in", viewer: null, devOidc: true, body }));
    });

    ui.post(`${DEV_OIDC_PATH}/interaction/:uid/login`, async (req, reply) => {
      const uid = Uid.parse((req.params as Record<string, string>).uid);
      const body = z
        .object({ _csrf: z.string(), email: z.string().trim().toLowerCase().pipe(z.email()) })
        .parse(req.body ?? {});
      if (!csrf.check(`dev-oidc:${uid}`, body._csrf)) return reply.code(403).send("invalid form token");
      reply.hijack();
      ctx.log.warn({ dev_oidc: true }, "DEVELOPMENT ONLY: signed in through the embedded OpenID provider");
      await provider
        .interactionFinished(
          req.raw,
          reply.raw,
          { login: { accountId: body.email } },
          { mergeWithLastSubmission: false },
        )
        .catch((err) => {
          reply.raw.statusCode = 400;
          reply.raw.end(`development sign-in failed: ${(err as Error).message}`);
        });
    });

    ui.post(`${DEV_OIDC_PATH}/interaction/:uid/abort`, async (req, reply) => {
      const uid = Uid.parse((req.params as Record<string, string>).uid);
      if (!csrf.check(`dev-oidc:${uid}`, (req.body as Record<string, unknown>)?._csrf))
        return reply.code(403).send("invalid form token");
      reply.hijack();
      await provider
        .interactionFinished(
          req.raw,
          reply.raw,
          { error: "access_denied", error_description: "The user cancelled the sign-in." },
          { mergeWithLastSubmission: false },
        )
        .catch((err) => {
          reply.raw.statusCode = 400;
          reply.raw.end(`development sign-in failed: ${(err as Error).message}`);
        });
    });
  });
}
