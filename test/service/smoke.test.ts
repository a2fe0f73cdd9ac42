import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";

describe("service smoke", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("acme");
  });
  afterAll(async () => t?.close());

  it("opens a chain, records, approves, completes and returns a receipt", async () => {
    const c = await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "smoke" } });
    expect(c.statusCode, c.body).toBe(201);
    const chainId = c.json().chain_id;
    const a = await t.call("POST", `/v1/chains/${chainId}/actions`, {
      token: org.clientKey,
      body: {
        agent_name: "reader",
        action_type: "tool_call",
        action_name: "read_file",
        payload: { path: "/x" },
      },
    });
    expect(a.statusCode, a.body).toBe(200);
    expect(a.json().policy_decision).toBe("allow");
    const pay = await t.call("POST", `/v1/chains/${chainId}/actions`, {
      token: org.clientKey,
      body: {
        agent_name: "payer",
        action_type: "tool_call",
        action_name: "pay",
        payload: { amount_usd: 7500 },
      },
    });
    expect(pay.json().policy_decision, pay.body).toBe("require_approval");
    const approvalId = pay.json().approval_id;
    const st = await t.call("GET", `/v1/chains/${chainId}/approval-status`, { token: org.clientKey });
    expect(st.json().chain_status).toBe("pending_approval");
    const d = await t.call("POST", `/v1/approvals/${approvalId}/decision`, {
      token: org.adminKey,
      body: { decision: "approve", exception_duration: "1d" },
    });
    expect(d.statusCode, d.body).toBe(200);
    const st2 = await t.call("GET", `/v1/chains/${chainId}/approval-status`, { token: org.clientKey });
    expect(st2.json().approval.status).toBe("approved");
    expect(st2.json().approval.decision.decision_source).toBe("human_approval");
    const done = await t.call("POST", `/v1/chains/${chainId}/complete`, { token: org.clientKey, body: {} });
    expect(done.statusCode, done.body).toBe(200);
    const r = await t.call("GET", `/v1/chains/${chainId}/receipt`, { token: org.clientKey });
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().receipt_number).toMatch(/^PR-\d{4}-00001$/);
    expect(r.json().signature).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(r.json().cumulative_metrics.financial_exposure_usd).toBe(7500);
  });
});

describe("policy configuration layering", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("layers");
  });
  afterAll(async () => t?.close());

  it("a chain override changes only the keys it sets", async () => {
    await t.call("PUT", "/v1/admin/organizations/layers/policies/base", {
      token: t.adminToken,
      body: {
        config: { external_domains_allowlist: ["partner.example"], financial_approval_threshold_usd: 100 },
      },
    });
    const c = await t.call("POST", "/v1/chains", {
      token: org.clientKey,
      body: { name: "override", policy_config: { financial_approval_threshold_usd: 1000 } },
    });
    const chainId = c.json().chain_id;
    const rec = (payload: Record<string, unknown>) =>
      t.call("POST", `/v1/chains/${chainId}/actions`, {
        token: org.clientKey,
        body: { agent_name: "a", action_type: "tool_call", action_name: "send", payload },
      });
    // allowlist from the org policy survives the chain override
    expect((await rec({ url: "https://partner.example/x" })).json().policy_decision).toBe("allow");
    // chain threshold (1000) wins over the org policy (100)
    expect((await rec({ amount_usd: 500 })).json().policy_decision).toBe("allow");
    expect((await rec({ amount_usd: 1500 })).json().policy_decision).toBe("require_approval");
  });
});
