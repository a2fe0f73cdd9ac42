/**
 * Every approval trigger of the spec's Limits table, its default and its config key, through the
 * real HTTP API and database (the engine's own unit tests cover the edge cases).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";

type Case = {
  name: string;
  config?: Record<string, unknown>;
  action: {
    agent_name?: string;
    action_type?: string;
    action_name: string;
    payload?: Record<string, unknown>;
  };
  outcome: string;
  policy: string | null;
};

const cases: Case[] = [
  {
    name: "plain read",
    action: { action_name: "read_file", payload: { path: "/tmp/a" } },
    outcome: "allow",
    policy: null,
  },
  {
    name: "amount_usd above 5000",
    action: { action_name: "pay", payload: { amount_usd: 5000.01 } },
    outcome: "require_approval",
    policy: "financial_approval_threshold",
  },
  {
    name: "amount exactly 5000",
    action: { action_name: "pay", payload: { amount: 5000 } },
    outcome: "allow",
    policy: null,
  },
  {
    name: "value above 5000",
    action: { action_name: "pay", payload: { value: 9000 } },
    outcome: "require_approval",
    policy: "financial_approval_threshold",
  },
  {
    name: "nested amount ignored",
    action: { action_name: "pay", payload: { order: { amount_usd: 9000 } } },
    outcome: "allow",
    policy: null,
  },
  {
    name: "threshold raised by config",
    config: { financial_approval_threshold_usd: 10000 },
    action: { action_name: "pay", payload: { amount_usd: 9000 } },
    outcome: "allow",
    policy: null,
  },
  {
    name: "financial deny threshold",
    config: { financial_deny_threshold_usd: 1000 },
    action: { action_name: "pay", payload: { amount_usd: 2000 } },
    outcome: "deny",
    policy: "financial_deny_threshold",
  },
  {
    name: "first external communication",
    action: { action_name: "send_email", payload: { to: "someone@outside.example" } },
    outcome: "require_approval",
    policy: "first_external_communication",
  },
  {
    name: "allowlisted domain",
    config: { external_domains_allowlist: ["outside.example"] },
    action: { action_name: "send_email", payload: { to: "a@outside.example" } },
    outcome: "allow",
    policy: null,
  },
  {
    name: "first external off",
    config: { first_external_communication_requires_approval: false },
    action: { action_name: "http_post", payload: { url: "https://api.outside.example/x" } },
    outcome: "allow_with_flag",
    policy: "exfiltration_alert",
  },
  {
    name: "bulk operation 100 records",
    action: { action_name: "update_rows", payload: { record_count: 100 } },
    outcome: "require_approval",
    policy: "bulk_operation",
  },
  {
    name: "bulk operation 99 records",
    action: { action_name: "update_rows", payload: { record_count: 99 } },
    outcome: "allow",
    policy: null,
  },
  {
    name: "bulk threshold config",
    config: { bulk_operation_threshold: 50 },
    action: { action_name: "update_rows", payload: { records: Array.from({ length: 60 }, (_, i) => i) } },
    outcome: "require_approval",
    policy: "bulk_operation",
  },
  {
    name: "bulk deletion 10 items",
    action: { action_name: "delete_files", payload: { ids: Array.from({ length: 10 }, (_, i) => `f${i}`) } },
    outcome: "require_approval",
    policy: "bulk_deletion",
  },
  {
    name: "deletion of 9 items",
    action: { action_name: "delete_files", payload: { count: 9 } },
    outcome: "allow",
    policy: null,
  },
  {
    name: "irreversible by name",
    action: { action_name: "sign_contract", payload: {} },
    outcome: "require_approval",
    policy: "irreversible_action",
  },
  {
    name: "irreversible by tag",
    action: { action_name: "do_it", payload: { irreversible: true } },
    outcome: "require_approval",
    policy: "irreversible_action",
  },
  {
    name: "high-risk agent",
    config: { high_risk_agents: ["trader"] },
    action: { agent_name: "trader", action_name: "read_file" },
    outcome: "require_approval",
    policy: "high_risk_agent",
  },
  {
    name: "outside declared scope",
    config: { agent_scopes: { scoped: { action_names: ["read_*"] } } },
    action: { agent_name: "scoped", action_name: "write_file" },
    outcome: "require_approval",
    policy: "agent_scope",
  },
  {
    name: "inside declared scope",
    config: { agent_scopes: { scoped: { action_names: ["read_*"] } } },
    action: { agent_name: "scoped", action_name: "read_file" },
    outcome: "allow",
    policy: null,
  },
  {
    name: "PII to external domain",
    config: { first_external_communication_requires_approval: false },
    action: {
      action_name: "http_post",
      payload: { url: "https://x.outside.example", body: "ssn 123-45-6789" },
    },
    outcome: "require_approval",
    policy: "pii_to_external",
  },
  {
    name: "custom deny rule",
    config: {
      custom_rules: [
        {
          name: "no-prod-drop",
          match: { action_name: "drop_*", payload: { env: "prod" } },
          outcome: "deny",
          reason: "never drop prod",
          remediation: "use staging",
        },
      ],
    },
    action: { action_name: "drop_table", payload: { env: "prod" } },
    outcome: "deny",
    policy: "no-prod-drop",
  },
  {
    name: "custom approval rule",
    config: {
      custom_rules: [
        {
          name: "wire",
          match: { action_type: "tool_call", action_name: "wire_transfer" },
          outcome: "require_approval",
          reason: "wires need eyes",
        },
      ],
    },
    action: { action_name: "wire_transfer", payload: {} },
    outcome: "require_approval",
    policy: "wire",
  },
];

describe("approval triggers through the API", () => {
  let t: TestService;
  let org: Awaited<ReturnType<TestService["bootstrapOrg"]>>;
  beforeAll(async () => {
    t = await startTestService();
    org = await t.bootstrapOrg("triggers");
  });
  afterAll(async () => t?.close());

  it.each(cases)("$name → $outcome", async (c) => {
    const chain = await t.call("POST", "/v1/chains", {
      token: org.clientKey,
      body: { name: "trigger-case", policy_config: c.config ?? {} },
    });
    expect(chain.statusCode, chain.body).toBe(201);
    const r = await t.call("POST", `/v1/chains/${chain.json().chain_id}/actions`, {
      token: org.clientKey,
      body: { agent_name: "agent", action_type: "tool_call", payload: {}, ...c.action },
    });
    expect(r.statusCode, r.body).toBe(200);
    const d = r.json();
    expect(d.policy_decision).toBe(c.outcome);
    expect(d.policy_name).toBe(c.policy);
    expect(d.decision_source).toBe("backend_evaluation");
    // every PolicyDecision field of the spec is present
    for (const f of [
      "decision_reason",
      "policy_name",
      "kill_switch_active",
      "pause_reason",
      "remediation",
      "docs_url",
      "evaluation_mode",
      "shadow_decision",
      "estimated_cost_usd",
      "auto_paused",
    ])
      expect(d).toHaveProperty(f);
    expect(d.approval_id === null).toBe(c.outcome !== "require_approval");
  });

  it("cumulative exposure above 10000 requires approval on the next financial action", async () => {
    const chain = (
      await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "cumulative" } })
    ).json();
    const pay = (amount: number) =>
      t.call("POST", `/v1/chains/${chain.chain_id}/actions`, {
        token: org.clientKey,
        body: {
          agent_name: "payer",
          action_type: "tool_call",
          action_name: "pay",
          payload: { amount_usd: amount },
        },
      });
    expect((await pay(4000)).json().policy_decision).toBe("allow");
    expect((await pay(4000)).json().policy_decision).toBe("allow");
    const third = (await pay(4000)).json();
    expect(third.policy_decision).toBe("require_approval");
    expect(third.policy_name).toBe("cumulative_financial_threshold");
  });

  it("estimates the cost of llm_call events", async () => {
    const chain = (
      await t.call("POST", "/v1/chains", { token: org.clientKey, body: { name: "llm" } })
    ).json();
    const r = await t.call("POST", `/v1/chains/${chain.chain_id}/actions`, {
      token: org.clientKey,
      body: {
        agent_name: "writer",
        action_type: "llm_call",
        action_name: "complete",
        payload: { model: "m", input_tokens: 1000, output_tokens: 1000 },
      },
    });
    expect(r.json().estimated_cost_usd).toBeCloseTo(0.018, 6);
  });
});
