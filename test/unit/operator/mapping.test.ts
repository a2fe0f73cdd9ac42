import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { approverTeamBody } from "../../../operator/controllers/approverteam/mapping.js";
import { policyBody } from "../../../operator/controllers/governancepolicy/mapping.js";
import { organizationBody } from "../../../operator/controllers/organization/mapping.js";
import { managedBy, serviceName } from "../../../operator/controllers/shared/mapping.js";
import {
  ApproverTeamSpecSchema,
  GovernancePolicySpecSchema,
  OrganizationSpecSchema,
} from "../../../operator/crds/schema.js";
import {
  OrganizationSpecSchema as ServiceOrg,
  PolicySpecSchema as ServicePolicy,
  ApproverTeamSpecSchema as ServiceTeam,
} from "../../../src/contract/v1/admin.js";
import { PolicyConfigPatchSchema } from "../../../src/policy/schema.js";
import { identity, config as policyConfig, run } from "../policy/helpers.js";

const root = path.resolve(import.meta.dirname, "../../..");
const example = async (file: string) =>
  parseYaml(await readFile(path.join(root, "examples", file), "utf8")).spec;

describe("CRD spec → service admin API body", () => {
  it("names and owners", () => {
    expect(serviceName({ namespace: "team-a", name: "payments" })).toBe("team-a.payments");
    expect(managedBy({ namespace: "team-a", name: "payments" })).toBe("tollgate-operator/team-a/payments");
    expect(managedBy({ name: "acme" })).toBe("tollgate-operator/acme");
  });

  it("maps the example Organization to a body the service accepts", async () => {
    const body = organizationBody(
      OrganizationSpecSchema.parse(await example("10-organization.yaml")),
      "tollgate-operator/acme",
    );
    expect(ServiceOrg.parse(body)).toEqual({
      display_name: "Acme Corp",
      environment: "production",
      kill_switch: { active: false, reason: null },
      pause: { active: false, reason: null },
      approval_timeout_hours: 24,
      evaluation_mode: "enforce",
      runaway_limits: { max_events: 1000, max_duration_seconds: 86400, max_tokens: 2000000 },
      api_keys_enabled: true,
      managed_by: "tollgate-operator/acme",
    });
  });

  it("maps a minimal Organization with defaults and an active kill switch", () => {
    const spec = OrganizationSpecSchema.parse({
      slug: "a",
      killSwitch: { active: true, reason: "incident 42" },
    });
    const body = ServiceOrg.parse(organizationBody(spec, "o"));
    expect(body.kill_switch).toEqual({ active: true, reason: "incident 42" });
    expect(body.runaway_limits).toBeUndefined();
    expect(body.display_name).toBeUndefined();
  });

  it("maps the example GovernancePolicy to a config patch the service accepts", async () => {
    const body = policyBody(
      GovernancePolicySpecSchema.parse(await example("20-governancepolicy.yaml")),
      "owner",
    );
    const parsed = ServicePolicy.parse(body);
    expect(parsed.policy_version).toBe("2024-06-01");
    expect(parsed.config.financial_approval_threshold_usd).toBe(5000);
    expect(parsed.config.financial_deny_threshold_usd).toBe(50000);
    expect(parsed.config.agent_scopes).toEqual({
      "billing-agent": {
        action_types: ["tool_call", "llm_call"],
        action_names: ["create_invoice", "send_invoice", "read_*"],
        domains: ["api.stripe.com"],
      },
    });
    expect(parsed.config.custom_rules?.[0]).toEqual({
      name: "no-production-deletes",
      match: { action_name: "delete_*", payload: { environment: "production" } },
      outcome: "deny",
      reason: "Deleting production data is not allowed for agents",
      remediation: "Ask the on-call engineer to run the deletion",
      docs_url: "https://docs.acme.example/policies/deletes",
    });
    expect(parsed.config.custom_rules?.[1]?.match.payload).toEqual({ rows: { gt: 10000 } });
    expect(parsed.config.custom_rules?.slice(2).map((r) => [r.name, r.expression])).toEqual([
      ["large-invoices", "action.payload.invoice.total > 1000"],
      [
        "refunds-only-from-invoice-agent",
        '!(identity != null && identity.serviceAccount == "payments/invoice-agent")',
      ],
      [
        "no-email-after-customer-read",
        'chain.actions.exists(a, a.name == "read_customer") && action.name == "send_email"',
      ],
    ]);
    expect(parsed.config.identity_agent_names).toEqual({ "payments/invoice-agent": ["invoice-agent"] });
  });

  it("the example GovernancePolicy's CEL rules and identity pin decide as their comments say", async () => {
    const patch = ServicePolicy.parse(
      policyBody(GovernancePolicySpecSchema.parse(await example("20-governancepolicy.yaml")), "o"),
    ).config;
    const config = {
      ...patch,
      financial_approval_threshold_usd: 1e9,
      cumulative_financial_threshold_usd: 1e9,
    };
    expect(policyConfig(config).custom_rules).toHaveLength(5);
    const decide = (s: Parameters<typeof run>[0]) => {
      const d = run({ ...s, config }).decision;
      return [d.policy_decision, d.policy_name];
    };
    const invoiceAgent = identity("payments", "invoice-agent");
    expect(
      decide({ action: { action_name: "create_invoice" }, payload: { invoice: { total: 1500 } } }),
    ).toEqual(["require_approval", "large-invoices"]);
    expect(
      decide({ action: { action_name: "create_invoice" }, payload: { invoice: { total: 900 } } }),
    ).toEqual(["allow", null]);
    expect(
      decide({ action: { action_name: "issue_refund" }, identity: identity("payments", "other") }),
    ).toEqual(["deny", "refunds-only-from-invoice-agent"]);
    expect(decide({ action: { action_name: "issue_refund" }, identity: null })[0]).toBe("deny");
    expect(
      decide({
        action: { action_name: "issue_refund", agent_name: "invoice-agent" },
        identity: invoiceAgent,
      }),
    ).toEqual(["allow", null]);
    expect(
      decide({ action: { agent_name: "billing-agent", action_name: "read_x" }, identity: invoiceAgent }),
    ).toEqual(["deny", "identity_agent_names"]);
    const earlier = [{ name: "read_customer", type: "tool_call", agent_name: "agent-a" }];
    expect(decide({ action: { action_name: "send_email" }, chain: { actions_so_far: earlier } })).toEqual([
      "require_approval",
      "no-email-after-customer-read",
    ]);
    // CEL's && is false when one side is false, even if the other side cannot be evaluated:
    // without the chain's actions, only send_email fails closed.
    expect(decide({ action: { action_name: "read_file" } })).toEqual(["allow", null]);
    expect(decide({ action: { action_name: "send_email" } })[0]).toBe("require_approval");
  });

  it("leaves unset keys out, so a policy overrides only what it sets", () => {
    const body = policyBody(GovernancePolicySpecSchema.parse({ organizationRef: { name: "a" } }), "o");
    expect(body).toEqual({ config: {}, managed_by: "o" });
    expect(ServicePolicy.parse(body).config).toEqual({});
  });

  it("covers every policy configuration key except the organization-level ones", () => {
    const full = GovernancePolicySpecSchema.parse({
      organizationRef: { name: "a" },
      thresholds: {
        financialApprovalUsd: 1,
        cumulativeFinancialUsd: 2,
        financialDenyUsd: 3,
        bulkOperation: 4,
        bulkDeletion: 5,
      },
      financialNotify: ["cfo@x.io"],
      externalDomainsAllowlist: ["x.io"],
      internalDomains: ["corp.x.io"],
      highRiskAgents: ["bot"],
      agentScopes: [{ agentName: "bot", actionTypes: ["tool_call"] }],
      firstExternalCommunicationRequiresApproval: false,
      piiToExternalRequiresApproval: false,
      irreversibleActions: ["sign"],
      customRules: [{ name: "r", match: { agentName: "bot" }, outcome: "allow" }],
      expressionErrorOutcome: "deny",
      identityAgentNames: [{ serviceAccount: "payments/*", agentNames: ["invoice-*"] }],
      llmPricing: [{ model: "m", inputPer1kUsd: 0.1, outputPer1kUsd: 0.2 }],
      defaultLlmPrice: { inputPer1kUsd: 0.5 },
    });
    const config = PolicyConfigPatchSchema.parse(policyBody(full, "o").config);
    const organizationLevel = ["evaluation_mode", "runaway_limits"];
    expect(Object.keys(config).sort()).toEqual(
      Object.keys(PolicyConfigPatchSchema.shape)
        .filter((k) => !organizationLevel.includes(k))
        .sort(),
    );
    expect(config.default_llm_price).toEqual({ input_per_1k_usd: 0.5 });
    expect(config.llm_pricing).toEqual({ m: { input_per_1k_usd: 0.1, output_per_1k_usd: 0.2 } });
  });

  it("maps identity matchers, expressions and identity pinning to the service's keys", () => {
    const spec = GovernancePolicySpecSchema.parse({
      organizationRef: { name: "a" },
      agentScopes: [
        {
          agentName: "invoice-agent",
          serviceAccounts: ["payments/invoice-agent"],
          identities: ["spiffe://cluster.local/ns/payments/sa/invoice-agent"],
        },
      ],
      customRules: [
        {
          name: "big-invoices",
          match: { actionName: "pay_*", serviceAccounts: ["payments/*"] },
          expression: "action.payload.invoice.total > 1000",
          outcome: "require_approval",
          reason: "Large invoice",
        },
        { name: "expr-only", expression: "chain.eventCount > 5", outcome: "deny", reason: "Too many" },
      ],
      identityAgentNames: [
        { serviceAccount: "payments/invoice-agent", agentNames: ["invoice-agent"] },
        { serviceAccount: "payments/*", agentNames: ["payments-*"] },
      ],
    });
    const config = ServicePolicy.parse(policyBody(spec, "o")).config;
    expect(config.agent_scopes).toEqual({
      "invoice-agent": {
        service_accounts: ["payments/invoice-agent"],
        identities: ["spiffe://cluster.local/ns/payments/sa/invoice-agent"],
      },
    });
    expect(config.custom_rules).toEqual([
      {
        name: "big-invoices",
        match: { action_name: "pay_*", service_accounts: ["payments/*"] },
        expression: "action.payload.invoice.total > 1000",
        outcome: "require_approval",
        reason: "Large invoice",
      },
      {
        name: "expr-only",
        match: {},
        expression: "chain.eventCount > 5",
        outcome: "deny",
        reason: "Too many",
      },
    ]);
    expect(config.identity_agent_names).toEqual({
      "payments/invoice-agent": ["invoice-agent"],
      "payments/*": ["payments-*"],
    });
  });

  it("refuses a rule with neither match nor expression, and malformed identity patterns", () => {
    const base = { organizationRef: { name: "a" } };
    expect(
      GovernancePolicySpecSchema.safeParse({ ...base, customRules: [{ name: "r", outcome: "allow" }] })
        .success,
    ).toBe(false);
    for (const serviceAccounts of [["*"], ["invoice-agent"], ["payments/"], ["Payments/x"]]) {
      expect(
        GovernancePolicySpecSchema.safeParse({
          ...base,
          agentScopes: [{ agentName: "a", serviceAccounts }],
        }).success,
        JSON.stringify(serviceAccounts),
      ).toBe(false);
    }
    expect(
      GovernancePolicySpecSchema.safeParse({
        ...base,
        customRules: [{ name: "r", match: { identities: ["payments/x"] }, outcome: "allow" }],
      }).success,
    ).toBe(false);
  });

  it("maps the example ApproverTeam to a body the service accepts", async () => {
    const body = approverTeamBody(
      ApproverTeamSpecSchema.parse(await example("30-approverteam.yaml")),
      "owner",
    );
    expect(ServiceTeam.parse(body)).toEqual({
      approvers: [
        { email: "cfo@acme.example", role: "admin", name: "Chief Financial Officer" },
        { email: "controller@acme.example", role: "approver" },
      ],
      fallback_approvers: ["ceo@acme.example"],
      managed_by: "owner",
    });
  });
});
