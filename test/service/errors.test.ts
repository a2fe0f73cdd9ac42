/**
 * Bad input and authorization at the boundary: 400 naming the field, 401, 403, 404 for another
 * organization's ids, 409 for a sealed chain — and nothing half-written.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUserSession } from "../../src/service/auth.js";
import { startTestService, type TestService } from "../support/service.js";

describe("errors at the boundary", () => {
  let t: TestService;
  let a: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  let b: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  let chainA: string;
  beforeAll(async () => {
    t = await startTestService();
    a = await t.bootstrapOrg("org-a");
    b = await t.bootstrapOrg("org-b");
    chainA = (await t.call("POST", "/v1/chains", { token: a.clientKey, body: { name: "a" } })).json()
      .chain_id;
  });
  afterAll(async () => t?.close());

  /** A pending approval on chain A (it blocks the chain until releaseApproval). */
  const pendingApproval = async (): Promise<string> =>
    (
      await t.call("POST", `/v1/chains/${chainA}/actions`, {
        token: a.clientKey,
        body: {
          agent_name: "p",
          action_type: "tool_call",
          action_name: "pay",
          payload: { amount_usd: 6000 },
        },
      })
    ).json().approval_id;
  const releaseApproval = (approvalId: string) =>
    t.call("POST", `/v1/approvals/${approvalId}/decision`, { token: a.adminKey, body: { decision: "deny" } });

  const count = async (table: string) =>
    Number((await t.service.ctx.db.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n);

  it.each([
    [{ action_type: "tool_call", action_name: "x" }, "body.agent_name"],
    [{ agent_name: "", action_type: "tool_call", action_name: "x" }, "body.agent_name"],
    [{ agent_name: "a", action_type: 7, action_name: "x" }, "body.action_type"],
    [{ agent_name: "a", action_type: "tool_call", action_name: "x", payload: [1] }, "body.payload"],
    [{ agent_name: "a", action_type: "tool_call", action_name: "x", surprise: 1 }, "body"],
  ])("record %j → 400 naming %s, nothing recorded", async (body, field) => {
    const before = await count("chain_events");
    const r = await t.call("POST", `/v1/chains/${chainA}/actions`, { token: a.clientKey, body });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({ statusCode: 400, code: "TG_ERR_VALIDATION", error: "Bad Request" });
    expect(r.json().message.startsWith(field)).toBe(true);
    expect(await count("chain_events")).toBe(before);
  });

  it("a malformed chain id is a 400 on the path parameter", async () => {
    const r = await t.call("GET", "/v1/chains/not-a-uuid", { token: a.clientKey });
    expect(r.statusCode).toBe(400);
    expect(r.json().message).toMatch(/^params\.chain_id/);
  });

  it("invalid JSON is a 400", async () => {
    const r = await t.service.app.inject({
      method: "POST",
      url: "/v1/chains",
      headers: { authorization: `Bearer ${a.clientKey}`, "content-type": "application/json" },
      payload: "{not json",
    });
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({
      statusCode: 400,
      code: "TG_ERR_REQUEST",
      error: "Bad Request",
      message: expect.stringMatching(/not valid JSON/),
      details: { framework_code: "FST_ERR_CTP_INVALID_JSON_BODY" },
    });
  });

  it("framework refusals answer TG_ERR_REQUEST, never an FST_ERR_* code (media type, size, path encoding)", async () => {
    const auth = { authorization: `Bearer ${a.clientKey}` };
    const media = await t.service.app.inject({
      method: "POST",
      url: "/v1/chains",
      headers: { ...auth, "content-type": "text/xml" },
      payload: "<chain/>",
    });
    const large = await t.service.app.inject({
      method: "POST",
      url: "/v1/chains",
      headers: { ...auth, "content-type": "application/json" },
      payload: JSON.stringify({ name: "x", metadata: { blob: "a".repeat(1024 * 1024 + 1) } }),
    });
    const path = await t.service.app.inject({ method: "GET", url: "/v1/chains/%FF%FE", headers: auth });
    expect([media, large, path].map((r) => [r.statusCode, r.json().code])).toEqual([
      [415, "TG_ERR_REQUEST"],
      [413, "TG_ERR_REQUEST"],
      [400, "TG_ERR_REQUEST"],
    ]);
    expect(media.json().details).toEqual({ framework_code: "FST_ERR_CTP_INVALID_MEDIA_TYPE" });
    expect(large.json().details).toEqual({ framework_code: "FST_ERR_CTP_BODY_TOO_LARGE" });
    // The path is not echoed back.
    expect(path.json().message).toBe("The request path is not valid percent-encoded UTF-8");
  });

  it("chain creation validates policy_config keys", async () => {
    const r = await t.call("POST", "/v1/chains", {
      token: a.clientKey,
      body: { name: "x", policy_config: { financial_approval_threshold_usd: -1 } },
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().message).toMatch(/^body\.policy_config\.financial_approval_threshold_usd/);
  });

  it("no credential → 401; a wrong key → 401; a revoked key → 401", async () => {
    expect((await t.call("POST", "/v1/chains", { body: { name: "x" } })).statusCode).toBe(401);
    const wrong = await t.call("POST", "/v1/chains", { token: "tg_wrongwrongwrong", body: { name: "x" } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().code).toBe("TG_ERR_UNAUTHENTICATED");
    const made = (
      await t.call("POST", "/v1/admin/organizations/org-a/api-keys", {
        token: t.adminToken,
        body: { name: "temp" },
      })
    ).json();
    expect(
      (await t.call("POST", "/v1/chains", { token: made.api_key, body: { name: "x" } })).statusCode,
    ).toBe(201);
    await t.call("POST", `/v1/admin/organizations/org-a/api-keys/${made.key_id}/revoke`, {
      token: t.adminToken,
    });
    expect(
      (await t.call("POST", "/v1/chains", { token: made.api_key, body: { name: "x" } })).statusCode,
    ).toBe(401);
  });

  it("the wrong role → 403", async () => {
    // a client key cannot decide approvals or use the admin API
    const r = await t.call("POST", `/v1/approvals/${randomUUID()}/decision`, {
      token: a.clientKey,
      body: { decision: "approve" },
    });
    expect(r.statusCode).toBe(403);
    expect(
      (
        await t.call("PUT", "/v1/admin/organizations/org-a/policies/p", {
          token: a.clientKey,
          body: { config: {} },
        })
      ).statusCode,
    ).toBe(403);
    // a member session cannot decide
    await t.call("PUT", "/v1/admin/organizations/org-a/members/mem@a.example", {
      token: t.adminToken,
      body: { roles: ["member"] },
    });
    const s = await createUserSession(t.service.ctx.db, {
      orgId: a.orgId,
      email: "mem@a.example",
      clock: t.clock,
    });
    const approvalId = await pendingApproval();
    const m = await t.call("POST", `/v1/approvals/${approvalId}/decision`, {
      token: s.token,
      body: { decision: "approve" },
    });
    expect(m.statusCode).toBe(403);
    // only the service admin deletes organizations
    expect((await t.call("DELETE", "/v1/admin/organizations/org-a", { token: a.adminKey })).statusCode).toBe(
      403,
    );
    await releaseApproval(approvalId);
  });

  it("another organization's ids are 404, never 403", async () => {
    expect((await t.call("GET", `/v1/chains/${chainA}`, { token: b.clientKey })).statusCode).toBe(404);
    const rec = await t.call("POST", `/v1/chains/${chainA}/actions`, {
      token: b.clientKey,
      body: { agent_name: "x", action_type: "tool_call", action_name: "y" },
    });
    expect(rec.statusCode).toBe(404);
    expect(
      (await t.call("GET", `/v1/chains/${chainA}/approval-status`, { token: b.clientKey })).statusCode,
    ).toBe(404);
    expect((await t.call("POST", `/v1/chains/${chainA}/complete`, { token: b.clientKey })).statusCode).toBe(
      404,
    );
    const approvalId = await pendingApproval();
    const probe = await t.call("POST", `/v1/approvals/${approvalId}/decision`, {
      token: b.adminKey,
      body: { decision: "approve" },
    });
    expect(probe.statusCode).toBe(404);
    expect((await t.call("GET", "/v1/admin/organizations/org-a", { token: b.adminKey })).statusCode).toBe(
      404,
    );
    await releaseApproval(approvalId);
  });

  it("an unknown route is a 404 in the same error shape", async () => {
    const r = await t.call("GET", "/v1/nope", { token: a.clientKey });
    expect(r.statusCode).toBe(404);
    expect(r.json().code).toBe("TG_ERR_NOT_FOUND");
  });

  it("a completed chain refuses actions with 409 and records nothing", async () => {
    const c = (await t.call("POST", "/v1/chains", { token: a.clientKey, body: { name: "sealed" } })).json()
      .chain_id;
    await t.call("POST", `/v1/chains/${c}/complete`, { token: a.clientKey });
    const before = await count("chain_events");
    const r = await t.call("POST", `/v1/chains/${c}/actions`, {
      token: a.clientKey,
      body: { agent_name: "x", action_type: "tool_call", action_name: "y" },
    });
    expect(r.statusCode).toBe(409);
    expect(await count("chain_events")).toBe(before);
  });

  it("a failure inside a write rolls the whole transaction back", async () => {
    const c = (await t.call("POST", "/v1/chains", { token: a.clientKey, body: { name: "rollback" } })).json()
      .chain_id;
    const events = await count("chain_events");
    const approvals = await count("approvals");
    const jobs = await count("jobs");
    // make the approval insert fail after the event insert: a CHECK that rejects every approval
    await t.service.ctx.db.query("ALTER TABLE approvals ADD CONSTRAINT test_reject CHECK (false) NOT VALID");
    try {
      const r = await t.call("POST", `/v1/chains/${c}/actions`, {
        token: a.clientKey,
        body: {
          agent_name: "p",
          action_type: "tool_call",
          action_name: "pay",
          payload: { amount_usd: 9000 },
        },
      });
      expect(r.statusCode).toBe(500);
      expect(r.json()).toEqual({
        statusCode: 500,
        code: "TG_ERR_INTERNAL",
        error: "Internal Server Error",
        message: "Internal error",
      });
    } finally {
      await t.service.ctx.db.query("ALTER TABLE approvals DROP CONSTRAINT test_reject");
    }
    expect(await count("chain_events")).toBe(events);
    expect(await count("approvals")).toBe(approvals);
    expect(await count("jobs")).toBe(jobs);
    const chain = (await t.call("GET", `/v1/chains/${c}`, { token: a.clientKey })).json();
    expect(chain).toMatchObject({ status: "open", total_actions: 0 });
  });
});
