/**
 * Dashboard pages and forms in-process against the real service: output escaping, CSRF on
 * every form, roles (member, approver, admin; API keys are not dashboard users), safe headers,
 * and the admin forms' effects. The browser suite covers the same pages in Chromium.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { csrfOf, get, pendingApproval, postForm, sessionFor } from "../browser/support/dashboard.js";
import { startTestService, type TestService } from "../support/service.js";

let t: TestService;
let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
let admin: string;
let approver: string;
let member: string;

beforeAll(async () => {
  t = await startTestService();
  org = await t.bootstrapOrg("acme");
  const m = (email: string, roles: string[]) =>
    t.call("PUT", `/v1/admin/organizations/acme/members/${email}`, { token: t.adminToken, body: { roles } });
  await m("ada@acme.test", ["member", "admin"]);
  await m("alice@acme.test", ["member", "approver"]);
  await m("erin@acme.test", ["member"]);
  admin = await sessionFor(t.service.ctx.db, t.clock, "ada@acme.test", "acme");
  approver = await sessionFor(t.service.ctx.db, t.clock, "alice@acme.test", "acme");
  member = await sessionFor(t.service.ctx.db, t.clock, "erin@acme.test", "acme");
});

afterAll(async () => t?.close());

describe("dashboard pages", () => {
  it("escapes agent-supplied text everywhere it is shown", async () => {
    const c = await t.call("POST", "/v1/chains", {
      token: org.clientKey,
      body: { name: "<script>alert('chain')</script>", metadata: { "<b>k</b>": "<i>v</i>" } },
    });
    const chainId = c.json().chain_id;
    const a = await t.call("POST", `/v1/chains/${chainId}/actions`, {
      token: org.clientKey,
      body: {
        agent_name: '<img src=x onerror="alert(1)">',
        action_type: "tool_call",
        action_name: "pay</h3><script>x()</script>",
        payload: { amount_usd: 9000, note: '"><svg onload=alert(2)>' },
      },
    });
    expect(a.json().policy_decision).toBe("require_approval");
    for (const url of ["/dashboard/approvals", `/dashboard/chains/${chainId}`]) {
      const page = await get(t.service.app, url, approver);
      expect(page.statusCode, url).toBe(200);
      expect(page.body).not.toMatch(/<script>alert|<img src=x|<svg onload|<script>x\(\)|<b>k<\/b>|<i>v<\/i>/);
      expect(page.body).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
      // Who is asking: an API key recorded it, so the agent name is only the caller's label.
      expect(page.body, url).toMatch(/not verified \(API key/);
    }
    const approvals = await get(t.service.app, "/dashboard/approvals", approver);
    expect(approvals.body).toContain("&lt;script&gt;alert(&#39;chain&#39;)&lt;/script&gt;");
    expect(approvals.body).toContain("&quot;&gt;&lt;svg onload=alert(2)&gt;");
  });

  it("sends a strict Content-Security-Policy, no-referrer and frame denial, and never caches pages", async () => {
    const page = await get(t.service.app, "/dashboard/approvals", member);
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(page.headers["referrer-policy"]).toBe("no-referrer");
    expect(page.headers["x-frame-options"]).toBe("DENY");
    expect(page.headers["cache-control"]).toBe("no-store");
    expect(page.body).not.toMatch(/<script>|style="/);
    const css = await get(t.service.app, "/dashboard/static/tollgate.css");
    expect(css.statusCode).toBe(200);
    expect(css.headers["content-type"]).toContain("text/css");
  });

  it("sends people without a session to sign-in, and shows how to configure it", async () => {
    const page = await get(t.service.app, "/dashboard/chains/00000000-0000-4000-8000-000000000000");
    expect(page.statusCode).toBe(303);
    expect(page.headers.location).toBe(
      `/auth/login?return_to=${encodeURIComponent("/dashboard/chains/00000000-0000-4000-8000-000000000000")}`,
    );
    const login = await get(t.service.app, "/auth/login");
    expect(login.statusCode).toBe(503);
    expect(login.body).toContain("TOLLGATE_DEV_OIDC=true");
    const post = await postForm(t.service.app, "/dashboard/admin/api-keys", undefined, {
      name: "x",
      role: "client",
    });
    expect(post.statusCode).toBe(401);
  });

  it("is not for API keys", async () => {
    const page = await get(t.service.app, "/dashboard/approvals", org.adminKey);
    expect(page.statusCode).toBe(403);
    expect(page.body).toContain("API keys cannot open it");
  });

  it("answers unknown dashboard paths and chains of nobody with a 404 page", async () => {
    for (const url of [
      "/dashboard/nope",
      "/dashboard/chains/00000000-0000-4000-8000-000000000000",
      "/dashboard/chains/not-a-uuid",
    ]) {
      const r = await get(t.service.app, url, member);
      expect(r.statusCode, url).toBe(404);
      expect(r.headers["content-type"]).toContain("text/html");
    }
  });
});

describe("forms", () => {
  it("refuses every form without the session's CSRF token", async () => {
    const { approvalId } = await pendingApproval(t.service.app, org.clientKey, { chain: "csrf-check" });
    const other = await sessionFor(t.service.ctx.db, t.clock, "ada@acme.test", "acme");
    const otherCsrf = csrfOf((await get(t.service.app, "/dashboard/approvals", other)).body);
    const forms: [string, Record<string, string | string[]>][] = [
      [`/dashboard/approvals/${approvalId}/decision`, { decision: "approve" }],
      ["/dashboard/settings/team/teams", { name: "ops", approvers: "x@acme.test" }],
      ["/dashboard/settings/team/members", { email: "new@acme.test", roles: "member" }],
      ["/dashboard/admin/api-keys", { name: "k", role: "client" }],
      ["/dashboard/admin/verification-tokens", { artifact_type: "approval", artifact_id: approvalId }],
      ["/dashboard/admin/organization/kill-switch", { active: "true" }],
      ["/dashboard/admin/organization/pause", { active: "true" }],
    ];
    for (const [url, fields] of forms) {
      const missing = await postForm(t.service.app, url, admin, fields);
      expect(missing.statusCode, url).toBe(403);
      // A token of another session of the same person does not work either.
      const foreign = await postForm(t.service.app, url, admin, { ...fields, _csrf: otherCsrf });
      expect(foreign.statusCode, url).toBe(403);
    }
    expect((await t.call("GET", `/v1/approvals/${approvalId}`, { token: org.adminKey })).json().status).toBe(
      "pending",
    );
    const o = await t.call("GET", "/v1/admin/organizations/acme", { token: t.adminToken });
    expect(o.json().kill_switch.active).toBe(false);
  });

  it("refuses an exception with a denial and an empty decision", async () => {
    const { approvalId } = await pendingApproval(t.service.app, org.clientKey, { chain: "bad-forms" });
    const csrf = csrfOf((await get(t.service.app, "/dashboard/approvals", approver)).body);
    const url = `/dashboard/approvals/${approvalId}/decision`;
    const both = await postForm(t.service.app, url, approver, {
      _csrf: csrf,
      decision: "deny",
      exception: "on",
      exception_duration: "1w",
    });
    expect(both.statusCode).toBe(400);
    expect(both.body).toContain("can only be granted when approving");
    const none = await postForm(t.service.app, url, approver, { _csrf: csrf });
    expect(none.statusCode).toBe(400);
    expect(none.body).toContain("decision: choose approve or deny");
    const bad = await postForm(t.service.app, url, approver, {
      _csrf: csrf,
      decision: "approve",
      exception: "on",
      exception_duration: "2y",
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("exception_duration");
    expect((await t.call("GET", `/v1/approvals/${approvalId}`, { token: org.adminKey })).json().status).toBe(
      "pending",
    );
    const ok = await postForm(t.service.app, url, approver, {
      _csrf: csrf,
      decision: "approve",
      exception: "on",
      exception_duration: "1w",
    });
    expect(ok.statusCode, ok.body).toBe(303);
    const after = (await t.call("GET", `/v1/approvals/${approvalId}`, { token: org.adminKey })).json();
    expect(after).toMatchObject({
      status: "approved",
      decided_by: "alice@acme.test",
      exception: { duration: "1w" },
    });
    const twice = await postForm(t.service.app, url, approver, { _csrf: csrf, decision: "deny" });
    expect(twice.statusCode).toBe(409);
    expect(twice.body).toContain("already approved");
  });

  it("keeps admin pages and forms to admins", async () => {
    for (const who of [member, approver]) {
      for (const url of [
        "/dashboard/admin/api-keys",
        "/dashboard/admin/verification-tokens",
        "/dashboard/admin/organization",
      ]) {
        expect((await get(t.service.app, url, who)).statusCode, url).toBe(403);
      }
      const csrf = csrfOf((await get(t.service.app, "/dashboard/approvals", who)).body);
      const r = await postForm(t.service.app, "/dashboard/admin/organization/kill-switch", who, {
        _csrf: csrf,
        active: "true",
      });
      expect(r.statusCode).toBe(403);
    }
    const approvals = await get(t.service.app, "/dashboard/approvals", approver);
    expect(approvals.body).not.toContain("/dashboard/admin/api-keys");
    const adminPage = await get(t.service.app, "/dashboard/approvals", admin);
    expect(adminPage.body).toContain("/dashboard/admin/api-keys");
  });

  it("edits unmanaged approver teams and members; refuses teams managed by an ApproverTeam", async () => {
    const csrf = csrfOf((await get(t.service.app, "/dashboard/settings/team", admin)).body);
    const save = await postForm(t.service.app, "/dashboard/settings/team/teams", admin, {
      _csrf: csrf,
      name: "ops",
      approvers: "Omar@acme.test\nolga@acme.test admin\n",
      fallback_approvers: "fred@acme.test",
    });
    expect(save.statusCode, save.body).toBe(303);
    const o = (await t.call("GET", "/v1/admin/organizations/acme", { token: t.adminToken })).json();
    const ops = o.approver_teams.find((x: { name: string }) => x.name === "ops");
    expect(ops.approvers).toEqual([
      { email: "omar@acme.test", role: "approver" },
      { email: "olga@acme.test", role: "admin" },
    ]);
    expect(ops.fallback_approvers).toEqual(["fred@acme.test"]);
    const invalid = await postForm(t.service.app, "/dashboard/settings/team/teams", admin, {
      _csrf: csrf,
      name: "ops",
      approvers: "not-an-email",
    });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.body).toContain("approvers.0.email");
    await t.call("PUT", "/v1/admin/organizations/acme/approver-teams/managed", {
      token: t.adminToken,
      body: { approvers: [{ email: "m@acme.test" }], managed_by: "ApproverTeam ns/managed" },
    });
    const managed = await postForm(t.service.app, "/dashboard/settings/team/teams", admin, {
      _csrf: csrf,
      name: "managed",
      approvers: "evil@acme.test",
    });
    expect(managed.statusCode).toBe(409);
    const page = await get(t.service.app, "/dashboard/settings/team", member);
    expect(page.body).toContain("Read-only: this team is managed by the ApproverTeam resource");
    expect(page.body).not.toContain("evil@acme.test");
    const mem = await postForm(t.service.app, "/dashboard/settings/team/members", admin, {
      _csrf: csrf,
      email: "New.Person@acme.test",
      roles: ["member", "approver"],
    });
    expect(mem.statusCode, mem.body).toBe(303);
    const { rows } = await t.service.ctx.db.query(
      "SELECT roles FROM members WHERE email = 'new.person@acme.test'",
    );
    expect(rows[0]?.roles).toEqual(["member", "approver"]);
  });

  it("sign-out revokes the session and needs the CSRF token", async () => {
    const s = await sessionFor(t.service.ctx.db, t.clock, "erin@acme.test", "acme");
    const csrf = csrfOf((await get(t.service.app, "/dashboard/approvals", s)).body);
    expect((await postForm(t.service.app, "/auth/logout", s, {})).statusCode).toBe(403);
    expect((await get(t.service.app, "/dashboard/approvals", s)).statusCode).toBe(200);
    const out = await postForm(t.service.app, "/auth/logout", s, { _csrf: csrf });
    expect(out.statusCode).toBe(303);
    expect(out.headers.location).toBe("/auth/signed-out");
    const after = await get(t.service.app, "/dashboard/approvals", s);
    expect(after.statusCode).toBe(303);
    expect(after.headers.location).toMatch(/^\/auth\/login\?/);
  });
});
