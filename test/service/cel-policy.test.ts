/**
 * CEL custom rules through the real service and database (issue 28): a policy with a bad
 * expression is refused where it is written (admin API and a chain's policy_config: 400 naming
 * the rule and the position), a policy with expressions decides recorded actions, and an
 * expression that fails at evaluation fails closed. Callers here use API keys, so `identity` is
 * null; a verified identity (TokenReview) is tested in test/kube/identity.test.ts.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { policyBody } from "../../operator/controllers/governancepolicy/mapping.js";
import { nextStatus } from "../../operator/controllers/runtime/conditions.js";
import { classifyFailure } from "../../operator/controllers/runtime/resource-reconciler.js";
import { GovernancePolicySpecSchema } from "../../operator/crds/schema.js";
import { AdminApiClient } from "../../operator/governance/client.js";
import { startTestService, type TestService } from "../support/service.js";

describe("CEL custom rules through the API", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  beforeAll(async () => {
    t = await startTestService({ listen: true });
    org = await t.bootstrapOrg("cel");
  });
  afterAll(async () => t?.close());

  const putPolicy = (name: string, config: unknown) =>
    t.call("PUT", `/v1/admin/organizations/cel/policies/${name}`, { token: t.adminToken, body: { config } });
  const record = async (chainId: string, action: Record<string, unknown>) => {
    const r = await t.call("POST", `/v1/chains/${chainId}/actions`, {
      token: org.clientKey,
      body: { agent_name: "agent", action_type: "tool_call", payload: {}, ...action },
    });
    expect(r.statusCode, r.body).toBe(200);
    return r.json();
  };
  const newChain = async (policy_config: unknown = {}) => {
    const r = await t.call("POST", "/v1/chains", {
      token: org.clientKey,
      body: { name: "cel", policy_config },
    });
    expect(r.statusCode, r.body).toBe(201);
    return r.json().chain_id as string;
  };

  it("the admin API answers 400 naming the rule, the field and the position of a bad expression", async () => {
    const r = await putPolicy("bad", {
      custom_rules: [
        { name: "ok", expression: "chain.eventCount > 3", outcome: "deny", reason: "r" },
        { name: "typo", expression: "action.payload.total >\n  action.nmae", outcome: "deny", reason: "r" },
      ],
    });
    expect(r.statusCode).toBe(400);
    const body = r.json();
    expect(body.message).toMatch(
      /^body\.config\.custom_rules\.1\.expression: custom rule "typo": invalid CEL expression: 'action' has no field 'nmae' .* at line 2, column 9$/,
    );
    const syntax = await putPolicy("bad", {
      custom_rules: [{ name: "cut", expression: "action.name ==", outcome: "deny", reason: "r" }],
    });
    expect(syntax.statusCode).toBe(400);
    expect(syntax.json().message).toMatch(
      /custom rule "cut": invalid CEL expression: syntax error: .* at line 1, column \d+$/,
    );
  });

  it("a GovernancePolicy with a bad expression gets Synced=False naming the rule and the position", async () => {
    const spec = GovernancePolicySpecSchema.parse({
      organizationRef: { name: "cel" },
      customRules: [
        { name: "good", expression: "chain.eventCount > 100", outcome: "deny", reason: "long" },
        { name: "broken", expression: "action.payload.total > 1000 &&& true", outcome: "deny", reason: "r" },
      ],
    });
    const client = new AdminApiClient({ baseUrl: t.url, token: async () => t.adminToken });
    let status: ReturnType<typeof nextStatus> | undefined;
    try {
      await client.putPolicy("cel", "team-a.broken", policyBody(spec, "tollgate-operator/team-a/broken"));
    } catch (err) {
      status = nextStatus(undefined, 1, { kind: "failed", ...classifyFailure(err) }, new Date());
    } finally {
      client.close();
    }
    const synced = status?.conditions?.find((c) => c.type === "Synced");
    expect(synced).toMatchObject({ status: "False", reason: "ServiceRejected" });
    expect(synced?.message).toMatch(
      /custom_rules\.1\.expression: custom rule "broken": invalid CEL expression: syntax error: .* at line 1, column 29$/,
    );
  });

  it("a chain's policy_config with a bad expression is refused the same way", async () => {
    const r = await t.call("POST", "/v1/chains", {
      token: org.clientKey,
      body: {
        name: "x",
        policy_config: { custom_rules: [{ name: "r", expression: "nope(1)", outcome: "deny" }] },
      },
    });
    expect(r.statusCode).toBe(400);
    expect(r.json().message).toMatch(
      /custom rule "r": invalid CEL expression: undeclared reference to function 'nope'/,
    );
  });

  it("decides recorded actions with the organization's CEL rules", async () => {
    const put = await putPolicy("cel-rules", {
      custom_rules: [
        {
          name: "large-invoice",
          match: { action_name: "pay_invoice" },
          expression: "action.payload.invoice.total > 1000",
          outcome: "require_approval",
          reason: "Invoices above 1000 need a human",
        },
        {
          name: "no-long-chains",
          expression: "chain.eventCount >= 3 && action.name == 'export'",
          outcome: "deny",
          reason: "No export after three actions",
        },
      ],
    });
    expect(put.statusCode, put.body).toBeLessThan(300);
    const chain = await newChain();
    const small = await record(chain, { action_name: "pay_invoice", payload: { invoice: { total: 900 } } });
    expect(small).toMatchObject({ policy_decision: "allow", policy_name: null });
    const large = await record(chain, {
      action_name: "pay_invoice",
      payload: { invoice: { total: 1200.5 } },
    });
    expect(large).toMatchObject({
      policy_decision: "require_approval",
      policy_name: "large-invoice",
      decision_reason: "Invoices above 1000 need a human",
    });
    expect(large.approval_id).not.toBeNull();

    const other = await newChain();
    for (let i = 0; i < 3; i++)
      expect((await record(other, { action_name: "read" })).policy_decision).toBe("allow");
    expect(await record(other, { action_name: "export" })).toMatchObject({
      policy_decision: "deny",
      policy_name: "no-long-chains",
    });
  });

  it("chain history and the organization's environment reach expressions (chain.actions, org.environment)", async () => {
    // The chains' own policy_config carries the rules, so the organization's stay as they are.
    const chain = await newChain({
      custom_rules: [
        {
          name: "no-email-after-customer-read",
          expression: 'chain.actions.exists(a, a.name == "read_customer") && action.name == "send_email"',
          outcome: "require_approval",
          reason: "Sending e-mail after reading customer data needs a human",
        },
      ],
    });
    expect((await record(chain, { action_name: "send_email" })).policy_decision).toBe("allow");
    expect((await record(chain, { action_name: "read_customer" })).policy_decision).toBe("allow");
    expect(await record(chain, { action_name: "send_email" })).toMatchObject({
      policy_decision: "require_approval",
      policy_name: "no-email-after-customer-read",
    });
    // An unfilled variable would fail closed (require_approval): allow shows it was filled.
    const deploy = await newChain({
      custom_rules: [
        {
          name: "production-only-deploys",
          match: { action_name: "deploy" },
          expression: 'org.environment != "production"',
          outcome: "deny",
        },
      ],
    });
    expect((await record(deploy, { action_name: "deploy" })).policy_decision).toBe("allow");
  });

  it("identity is null for an API-key caller: a guarded rule does not match, an unguarded one fails closed", async () => {
    // The verified identity itself (TokenReview) is tested in test/kube/identity.test.ts.
    const chain = await newChain({
      custom_rules: [
        {
          name: "guarded",
          match: { action_name: "transfer" },
          expression: 'identity != null && identity.serviceAccount == "payments/invoice-agent"',
          outcome: "deny",
          reason: "guarded",
        },
        {
          name: "unguarded",
          match: { action_name: "send_email" },
          expression: 'identity.serviceAccount == "payments/invoice-agent"',
          outcome: "deny",
          reason: "unguarded",
        },
      ],
    });
    expect(await record(chain, { action_name: "transfer" })).toMatchObject({
      policy_decision: "allow",
      policy_name: null,
    });
    const unguarded = await record(chain, { action_name: "send_email" });
    expect(unguarded).toMatchObject({ policy_decision: "require_approval", policy_name: "unguarded" });
    expect(unguarded.decision_reason).toMatch(
      /^Custom rule unguarded: the CEL expression could not be evaluated/,
    );
  });

  it("chain history in an organization policy: e-mail after a customer read needs approval, in that chain only", async () => {
    const put = await putPolicy("history", {
      custom_rules: [
        {
          name: "no-email-after-customer-read",
          expression: 'chain.actions.exists(a, a.name == "read_customer") && action.name == "send_email"',
          outcome: "require_approval",
          reason: "Sending e-mail after reading customer data needs a human",
        },
      ],
    });
    expect(put.statusCode, put.body).toBeLessThan(300);
    try {
      const read = await newChain();
      const clean = await newChain();
      expect((await record(read, { action_name: "read_customer" })).policy_decision).toBe("allow");
      expect((await record(clean, { action_name: "read_orders" })).policy_decision).toBe("allow");
      expect(await record(read, { action_name: "send_email" })).toMatchObject({
        policy_decision: "require_approval",
        policy_name: "no-email-after-customer-read",
        decision_reason: "Sending e-mail after reading customer data needs a human",
      });
      expect(await record(clean, { action_name: "send_email" })).toMatchObject({
        policy_decision: "allow",
        policy_name: null,
      });
    } finally {
      await t.call("DELETE", "/v1/admin/organizations/cel/policies/history", { token: t.adminToken });
    }
  });

  it("an expression that fails at evaluation fails closed, require_approval or deny as configured", async () => {
    const chain = await newChain();
    const missing = await record(chain, { action_name: "pay_invoice", payload: { amount: 3 } });
    expect(missing.policy_decision).toBe("require_approval");
    expect(missing.policy_name).toBe("large-invoice");
    expect(missing.decision_reason).toMatch(
      /^Custom rule large-invoice: the CEL expression could not be evaluated/,
    );

    const denying = await newChain({ expression_error_outcome: "deny" });
    const d = await record(denying, { action_name: "pay_invoice", payload: { invoice: "n/a" } });
    expect(d).toMatchObject({ policy_decision: "deny", policy_name: "large-invoice" });
  });

  it("a sample of the CEL conformance vectors decides through the service as through the engine", async () => {
    const { vectors } = JSON.parse(
      readFileSync(path.join(import.meta.dirname, "../unit/policy/fixtures/cel-conformance.json"), "utf8"),
    ) as { vectors: { id: string; expr: string; expect: boolean | "eval_error" }[] };
    const sample = vectors.filter((_, i) => i % 25 === 0);
    expect(sample.length).toBeGreaterThan(10);
    for (const v of sample) {
      const chain = await newChain({
        custom_rules: [{ name: "v", expression: v.expr, outcome: "require_approval", reason: "vector" }],
      });
      const d = await record(chain, { action_name: "noop" });
      const want =
        v.expect === true || v.expect === "eval_error"
          ? { policy_decision: "require_approval", policy_name: "v" }
          : { policy_decision: "allow", policy_name: null };
      expect(d, v.id).toMatchObject(want);
      if (v.expect === true) expect(d.decision_reason, v.id).toBe("vector");
      if (v.expect === "eval_error") expect(d.decision_reason, v.id).toMatch(/could not be evaluated/);
    }
  });
});
