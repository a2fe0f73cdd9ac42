/**
 * Dashboard sign-in against an external OpenID provider (spec: "Authentication" 2): a real
 * oidc-provider on its own port plays "any standard issuer" (confidential client, PKCE,
 * claims only from userinfo, a custom `tollgate_org` claim). Roles come from the service's
 * membership table and ApproverTeams; the organization from the claim or the single membership.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildService, type Service } from "../../src/service/app.js";
import { ManualClock } from "../../src/service/clock.js";
import { hashSecret } from "../../src/service/secrets.js";
import { api, get } from "../browser/support/dashboard.js";
import { freshDatabase } from "../support/db.js";

const PUBLIC_URL = "http://tollgate.test";
const CLIENT_SECRET = randomBytes(24).toString("base64url");

interface Account {
  email: string;
  verified?: boolean;
  org?: string;
}

let service: Service;
let closeDb: () => Promise<void>;
let idp: Server;
let issuer: string;
/** Who the provider signs in next (its interaction finishes at once as this account). */
let next: Account = { email: "nobody@example.test" };
const accounts = new Map<string, Account>();

async function startProvider(): Promise<void> {
  const { default: Provider } = await import("oidc-provider");
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: "k1", alg: "RS256", use: "sig" };
  idp = await new Promise<Server>((resolve) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => resolve(srv));
  });
  issuer = `http://127.0.0.1:${(idp.address() as { port: number }).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: "tollgate-dashboard",
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${PUBLIC_URL}/auth/callback`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ["test-cookie-key-0123456789"] },
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      profile: ["name"],
      tollgate: ["tollgate_org"],
    },
    ttl: {
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      AccessToken: 600,
      IdToken: 600,
      AuthorizationCode: 60,
    },
    findAccount: async (_ctx, sub) => {
      const a = accounts.get(sub);
      if (!a) return undefined;
      return {
        accountId: sub,
        claims: async () => ({
          sub,
          email: a.email,
          email_verified: a.verified ?? true,
          ...(a.org && { tollgate_org: a.org }),
        }),
      };
    },
    loadExistingGrant: async (koa) => {
      const o = koa.oidc;
      const grant = new o.provider.Grant({ clientId: o.client!.clientId, accountId: o.session!.accountId! });
      grant.addOIDCScope("openid email profile tollgate");
      await grant.save();
      return grant;
    },
    interactions: { url: (_ctx, i) => `/interaction/${i.uid}` },
  });
  // The provider's sign-in "page": finishes at once as `next`.
  (provider as unknown as { use(fn: (ctx: KoaLike, next: () => Promise<void>) => Promise<void>): void }).use(
    async (ctx, nxt) => {
      if (!ctx.path.startsWith("/interaction/")) return nxt();
      const sub = `sub-${next.email}`;
      accounts.set(sub, next);
      ctx.respond = false;
      await provider.interactionFinished(
        ctx.req,
        ctx.res,
        { login: { accountId: sub } },
        { mergeWithLastSubmission: false },
      );
    },
  );
  idp.on("request", provider.callback());
}

interface KoaLike {
  path: string;
  respond: boolean;
  req: IncomingMessage;
  res: ServerResponse;
}

/** Parses Set-Cookie headers into a name → value map. */
function cookiesOf(setCookie: string | string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
    const [kv] = c.split(";");
    const i = kv!.indexOf("=");
    out[kv!.slice(0, i)] = kv!.slice(i + 1);
  }
  return out;
}

/**
 * Runs a sign-in as `account`: /auth/login in the service, the provider over real HTTP (with
 * its own cookie jar), and /auth/callback back in the service. Returns the callback response.
 */
async function signInAs(
  account: Account,
  opts: { returnTo?: string; mangleState?: boolean; dropLoginCookie?: boolean } = {},
) {
  next = account;
  const login = await get(
    service.app,
    `/auth/login${opts.returnTo ? `?return_to=${encodeURIComponent(opts.returnTo)}` : ""}`,
  );
  expect(login.statusCode, login.body).toBe(303);
  const loginCookie = cookiesOf(login.headers["set-cookie"]).tg_login!;
  expect(loginCookie).toBeTruthy();
  let url = login.headers.location as string;
  expect(url.startsWith(`${issuer}/auth?`)).toBe(true);
  expect(new URL(url).searchParams.get("code_challenge_method")).toBe("S256");
  const jar = new Map<string, string>();
  for (let i = 0; i < 10 && url.startsWith(issuer); i++) {
    const r = await fetch(url, {
      redirect: "manual",
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") },
    });
    for (const c of r.headers.getSetCookie()) {
      const [kv] = c.split(";");
      const j = kv!.indexOf("=");
      jar.set(kv!.slice(0, j), kv!.slice(j + 1));
    }
    expect([302, 303], await r.clone().text()).toContain(r.status);
    url = new URL(r.headers.get("location")!, url).href;
  }
  expect(url.startsWith(`${PUBLIC_URL}/auth/callback?`)).toBe(true);
  const cb = new URL(url);
  if (opts.mangleState) cb.searchParams.set("state", "x".repeat(43));
  return service.app.inject({
    method: "GET",
    url: `${cb.pathname}${cb.search}`,
    headers: opts.dropLoginCookie ? {} : { cookie: `tg_login=${loginCookie}` },
  });
}

beforeAll(async () => {
  await startProvider();
  const database = await freshDatabase();
  closeDb = database.close;
  const adminToken = `tga_${randomBytes(32).toString("base64url")}`;
  service = await buildService({
    db: database.db,
    masterKey: randomBytes(32),
    adminToken,
    publicUrl: PUBLIC_URL,
    clock: new ManualClock(),
    schedulerIntervalMs: 0,
    defaultMetrics: false,
    oidc: {
      issuerUrl: issuer,
      clientId: "tollgate-dashboard",
      clientSecret: CLIENT_SECRET,
      redirectUrl: null,
      scopes: "openid email profile tollgate",
      dev: null,
      // The test provider (oidc-provider) serves plain http on loopback: development only.
      allowInsecureHttp: true,
    },
  });
  await service.app.ready();
  for (const slug of ["acme", "globex"]) {
    expect(
      (await api(service.app, "PUT", `/v1/admin/organizations/${slug}`, adminToken, {})).statusCode,
    ).toBe(201);
  }
  const m = (slug: string, email: string, roles: string[]) =>
    api(service.app, "PUT", `/v1/admin/organizations/${slug}/members/${email}`, adminToken, { roles });
  await m("acme", "alice@acme.test", ["member", "approver"]);
  await m("acme", "pat@multi.test", ["member"]);
  await m("globex", "pat@multi.test", ["member", "admin"]);
  await api(service.app, "PUT", "/v1/admin/organizations/acme/approver-teams/ops", adminToken, {
    approvers: [{ email: "tom@acme.test" }],
    fallback_approvers: ["fay@acme.test"],
  });
});

afterAll(async () => {
  await service?.close();
  await closeDb?.();
  await new Promise<void>((r) => (idp ? idp.close(() => r()) : r()));
});

const sessionRoles = async (token: string) =>
  (
    await service.ctx.db.query(
      "SELECT s.roles, o.slug FROM user_sessions s JOIN organizations o ON o.id = s.org_id WHERE s.token_hash = $1",
      [hashSecret(token)],
    )
  ).rows[0];

describe("sign-in with an external OpenID provider", () => {
  it("refuses the same plain http:// issuer without allowInsecureHttp (OIDC_ALLOW_INSECURE_HTTP)", async () => {
    const database = await freshDatabase();
    try {
      const build = async () => {
        const s = await buildService({
          db: database.db,
          masterKey: randomBytes(32),
          adminToken: `tga_${randomBytes(32).toString("base64url")}`,
          publicUrl: PUBLIC_URL,
          clock: new ManualClock(),
          schedulerIntervalMs: 0,
          defaultMetrics: false,
          oidc: {
            issuerUrl: issuer,
            clientId: "tollgate-dashboard",
            clientSecret: CLIENT_SECRET,
            redirectUrl: null,
            scopes: "openid email profile tollgate",
            dev: null,
            allowInsecureHttp: false,
          },
        });
        try {
          await s.app.ready();
        } finally {
          await s.close();
        }
      };
      await expect(build()).rejects.toThrow(/plain http:\/\/ is refused.*OIDC_ALLOW_INSECURE_HTTP=true/);
    } finally {
      await database.close();
    }
  });

  it("signs a member in with roles from the membership table and a secure session cookie", async () => {
    const r = await signInAs({ email: "Alice@Acme.test" }, { returnTo: "/dashboard/settings/team" });
    expect(r.statusCode, r.body).toBe(303);
    expect(r.headers.location).toBe("/dashboard/settings/team");
    const setCookie = ([] as string[]).concat(r.headers["set-cookie"] as string[]);
    const session = setCookie.find((c) => c.startsWith("tg_session="))!;
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Lax/);
    expect(session).toMatch(/Path=\//);
    const token = cookiesOf(session).tg_session!;
    expect(await sessionRoles(token)).toEqual({ roles: ["member", "approver"], slug: "acme" });
    const page = await service.app.inject({
      method: "GET",
      url: "/dashboard/approvals",
      headers: { cookie: `tg_session=${token}` },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("alice@acme.test");
    // The session cookie does not authenticate the JSON API (bearer only there).
    const apiCall = await service.app.inject({
      method: "GET",
      url: "/v1/approvals",
      headers: { cookie: `tg_session=${token}` },
    });
    expect(apiCall.statusCode).toBe(401);
  });

  it("picks the organization from the tollgate_org claim", async () => {
    const r = await signInAs({ email: "pat@multi.test", org: "globex" });
    expect(r.statusCode, r.body).toBe(303);
    const token = cookiesOf(r.headers["set-cookie"]).tg_session!;
    expect(await sessionRoles(token)).toEqual({ roles: ["member", "admin"], slug: "globex" });
  });

  it("asks a person with several memberships and no claim to choose", async () => {
    const r = await signInAs({ email: "pat@multi.test" });
    expect(r.statusCode).toBe(200);
    expect(r.body).toContain("Choose an organization");
    const choice = cookiesOf(r.headers["set-cookie"]).tg_org_choice!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(r.body)![1]!;
    const { rows } = await service.ctx.db.query("SELECT id FROM organizations WHERE slug = 'acme'");
    const post = (fields: Record<string, string>) =>
      service.app.inject({
        method: "POST",
        url: "/auth/select-org",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: `tg_org_choice=${choice}` },
        payload: new URLSearchParams(fields).toString(),
      });
    expect((await post({ _csrf: "forged", org_id: rows[0]!.id })).statusCode).toBe(400);
    const ok = await post({ _csrf: csrf, org_id: rows[0]!.id });
    expect(ok.statusCode, ok.body).toBe(303);
    const token = cookiesOf(ok.headers["set-cookie"]).tg_session!;
    expect(await sessionRoles(token)).toEqual({ roles: ["member"], slug: "acme" });
  });

  it("lets ApproverTeam approvers and fallback approvers in as approvers", async () => {
    for (const email of ["tom@acme.test", "fay@acme.test"]) {
      const r = await signInAs({ email });
      expect(r.statusCode, r.body).toBe(303);
      expect(await sessionRoles(cookiesOf(r.headers["set-cookie"]).tg_session!)).toEqual({
        roles: ["approver"],
        slug: "acme",
      });
    }
  });

  it("refuses non-members, foreign organizations, unverified e-mail, a wrong state and a missing login cookie", async () => {
    const cases: [Account, Parameters<typeof signInAs>[1], number, string][] = [
      [{ email: "stranger@nowhere.test" }, {}, 403, "not a member of any organization"],
      [{ email: "alice@acme.test", org: "globex" }, {}, 403, "named an organization you are not a member of"],
      [{ email: "alice@acme.test", verified: false }, {}, 400, "not verified"],
      [{ email: "alice@acme.test" }, { mangleState: true }, 400, "Sign-in failed"],
      [{ email: "alice@acme.test" }, { dropLoginCookie: true }, 400, "Sign-in expired"],
    ];
    for (const [account, opts, status, text] of cases) {
      const r = await signInAs(account, opts);
      expect(r.statusCode, `${account.email} ${JSON.stringify(opts)}`).toBe(status);
      expect(r.body).toContain(text);
      expect(cookiesOf(r.headers["set-cookie"]).tg_session).toBeUndefined();
    }
  });

  it("only returns to local dashboard paths", async () => {
    const r = await signInAs({ email: "alice@acme.test" }, { returnTo: "https://evil.test/phish" });
    expect(r.headers.location).toBe("/dashboard/approvals");
    const r2 = await signInAs({ email: "alice@acme.test" }, { returnTo: "//evil.test/x" });
    expect(r2.headers.location).toBe("/dashboard/approvals");
  });
});
