import { describe, expect, it } from "vitest";
import {
  conditionHolds,
  customRuleMatches,
  type ExceptionScope,
  globMatch,
  mostSevere,
  type Trigger,
} from "../../../src/policy/engine.js";
import { extractFacts } from "../../../src/policy/facts.js";
import {
  type CustomRule,
  CustomRuleSchema,
  type PayloadCondition,
  PolicyDecisionSchema,
} from "../../../src/policy/schema.js";
import { action, config, exception, NOW, run, type Scenario } from "./helpers.js";

const rule = (r: Partial<CustomRule> & { match?: CustomRule["match"] }): CustomRule =>
  CustomRuleSchema.parse({ name: "rule", match: {}, outcome: "deny", ...r });

const outcome = (s: Scenario) => run(s).decision.policy_decision;
const policy = (s: Scenario) => run(s).decision.policy_name;

describe("no trigger", () => {
  it("allows with every PolicyDecision default", () => {
    const { decision, triggers, exception_id } = run();
    expect(decision).toEqual({
      policy_decision: "allow",
      decision_reason: "",
      decision_source: "backend_evaluation",
      policy_name: null,
      kill_switch_active: false,
      pause_reason: null,
      remediation: null,
      docs_url: null,
      evaluation_mode: "enforce",
      shadow_decision: null,
      estimated_cost_usd: null,
      auto_paused: false,
    });
    expect(PolicyDecisionSchema.parse(decision)).toEqual(decision);
    expect(triggers).toEqual([]);
    expect(exception_id).toBeNull();
  });
});

/**
 * Each built-in trigger: the scenario that fires it under the defaults, one that stays just
 * below the default, and the config key that moves the line.
 */
describe.each<{
  name: string;
  fires: Scenario;
  quiet: Scenario;
  configured: Scenario;
  outcome: string;
}>([
  {
    name: "financial_approval_threshold",
    fires: { payload: { amount_usd: 5000.01 } },
    quiet: { payload: { amount_usd: 5000 } },
    configured: { payload: { amount_usd: 101 }, config: { financial_approval_threshold_usd: 100 } },
    outcome: "require_approval",
  },
  {
    name: "financial_deny_threshold",
    fires: { payload: { amount: 20_000 }, config: { financial_deny_threshold_usd: 15_000 } },
    quiet: { payload: { amount: 20_000 }, chain: {} },
    configured: { payload: { value: 51 }, config: { financial_deny_threshold_usd: 50 } },
    outcome: "deny",
  },
  {
    name: "cumulative_financial_threshold",
    fires: { payload: { amount: 100 }, chain: { financial_exposure_usd: 9_950 } },
    quiet: { payload: { amount: 50 }, chain: { financial_exposure_usd: 9_950 } },
    configured: {
      payload: { amount: 10 },
      chain: { financial_exposure_usd: 95 },
      config: { cumulative_financial_threshold_usd: 100 },
    },
    outcome: "require_approval",
  },
  {
    name: "first_external_communication",
    fires: { payload: { to: "a@evil.com" } },
    quiet: { payload: { to: "a@evil.com" }, config: { external_domains_allowlist: ["evil.com"] } },
    configured: {
      payload: { to: "a@evil.com" },
      config: { first_external_communication_requires_approval: true, internal_domains: ["corp.com"] },
    },
    outcome: "require_approval",
  },
  {
    name: "exfiltration_alert",
    fires: { payload: { to: "a@evil.com" }, chain: { agents_with_external_communication: ["agent-a"] } },
    quiet: { payload: { to: "a@corp.com" }, config: { internal_domains: ["corp.com"] } },
    configured: {
      payload: { to: "a@evil.com" },
      config: { first_external_communication_requires_approval: false },
    },
    outcome: "allow_with_flag",
  },
  {
    name: "bulk_operation",
    fires: { payload: { record_count: 100 } },
    quiet: { payload: { record_count: 99 } },
    configured: { payload: { ids: [1, 2, 3] }, config: { bulk_operation_threshold: 3 } },
    outcome: "require_approval",
  },
  {
    name: "bulk_deletion",
    fires: { action: { action_name: "delete_users" }, payload: { record_count: 10 } },
    quiet: { action: { action_name: "delete_users" }, payload: { record_count: 9 } },
    configured: {
      action: { action_name: "update" },
      payload: { op: "delete", ids: [1, 2] },
      config: { bulk_deletion_threshold: 2 },
    },
    outcome: "require_approval",
  },
  {
    name: "irreversible_action",
    fires: { action: { action_name: "sign_contract" } },
    quiet: { action: { action_name: "draft_contract" } },
    configured: { action: { action_name: "wire_money" }, config: { irreversible_actions: ["wire_money"] } },
    outcome: "require_approval",
  },
  {
    name: "high_risk_agent",
    fires: { config: { high_risk_agents: ["agent-a"] } },
    quiet: { config: { high_risk_agents: ["agent-b"] } },
    configured: { config: { high_risk_agents: ["agent-*"] } },
    outcome: "require_approval",
  },
  {
    name: "agent_scope",
    fires: { config: { agent_scopes: { "agent-a": { action_types: ["llm_call"] } } } },
    quiet: { config: { agent_scopes: { "agent-a": { action_types: ["tool_call"] } } } },
    configured: { config: { agent_scopes: { "agent-a": { action_names: ["search_*"] } } } },
    outcome: "require_approval",
  },
  {
    name: "pii_to_external",
    fires: {
      payload: { to: "a@evil.com", body: "SSN 123-45-6789" },
      chain: { agents_with_external_communication: ["agent-a"] },
    },
    quiet: {
      payload: { to: "a@evil.com", body: "SSN 123-45-6789" },
      chain: { agents_with_external_communication: ["agent-a"] },
      config: { pii_to_external_requires_approval: false },
    },
    configured: {
      payload: { url: "https://x.evil.com", card: "4111 1111 1111 1111" },
      chain: { agents_with_external_communication: ["agent-a"] },
      config: { pii_to_external_requires_approval: true },
    },
    outcome: "require_approval",
  },
])("trigger $name", ({ name, fires, quiet, configured, outcome: expected }) => {
  it(`fires with ${expected}`, () => {
    const ev = run(fires);
    expect(ev.decision.policy_decision).toBe(expected);
    expect(ev.decision.policy_name).toBe(name);
    expect(ev.decision.decision_reason).not.toBe("");
    expect(ev.decision.remediation).toBeTruthy();
    expect(ev.triggers.map((t) => t.kind)).toContain(name);
  });
  it("stays quiet on the other side of its line", () => {
    expect(run(quiet).triggers.map((t) => t.kind)).not.toContain(name);
  });
  it("follows its config key", () => {
    expect(run(configured).triggers.map((t) => t.kind)).toContain(name);
  });
});

describe("built-in trigger details", () => {
  it("approval remediation names the config key", () => {
    expect(run({ payload: { amount: 6000 } }).decision.remediation).toBe(
      "Ask an approver, or raise financial_approval_threshold_usd",
    );
  });

  it.each([
    [{ amount: -6000 }, "require_approval"],
    [{ amount: "6000" }, "require_approval"],
    [{ amount: "$6,000" }, "require_approval"],
    [{ value: 6000 }, "require_approval"],
    [{ amount_usd: 10, amount: 6000 }, "allow"],
  ])("single amount %o → %s", (payload, expected) => {
    expect(outcome({ payload })).toBe(expected);
  });

  it.each<[string, number, Record<string, unknown>, string, boolean]>([
    ["the action that pushes exposure above", 9_950, { amount: 100 }, "tool_call", true],
    ["exposure already above: any financial action", 10_001, { amount: 1 }, "tool_call", true],
    ["exposure already above: financial type without amount", 10_001, {}, "financial", true],
    ["exposure already above: a refund still counts", 10_001, { amount: -500 }, "tool_call", true],
    ["exactly at the threshold is not above", 9_000, { amount: 1000 }, "tool_call", false],
    ["exposure above, non-financial action", 50_000, { note: "x" }, "tool_call", false],
  ])("cumulative: %s", (_n, financial_exposure_usd, payload, action_type, expected) => {
    const ev = run({ chain: { financial_exposure_usd }, payload, action: { action_type } });
    expect(ev.triggers.some((t) => t.kind === "cumulative_financial_threshold")).toBe(expected);
  });

  it("first external communication is per agent", () => {
    const s: Scenario = {
      payload: { to: "a@evil.com" },
      chain: { agents_with_external_communication: ["agent-b"] },
    };
    expect(policy(s)).toBe("first_external_communication");
    expect(policy({ ...s, action: { agent_name: "agent-b" } })).toBe("exfiltration_alert");
  });

  it("allowlisted external communication triggers nothing", () => {
    expect(
      run({ payload: { to: "a@partner.io" }, config: { external_domains_allowlist: ["partner.io"] } })
        .triggers,
    ).toEqual([]);
  });

  it("an agent scope bounds domains too; no scope entry means unrestricted", () => {
    const scopes = { "agent-a": { domains: ["partner.io"] } };
    expect(
      policy({
        payload: { url: "https://api.partner.io" },
        config: { agent_scopes: scopes, external_domains_allowlist: ["*.partner.io"] },
      }),
    ).toBeNull();
    expect(
      policy({
        payload: { url: "https://evil.com" },
        config: { agent_scopes: scopes, first_external_communication_requires_approval: false },
      }),
    ).toBe("agent_scope");
    expect(policy({ action: { agent_name: "agent-z" }, config: { agent_scopes: scopes } })).toBeNull();
    expect(policy({ action: { agent_name: "constructor" }, config: { agent_scopes: scopes } })).toBeNull();
  });

  it("an empty scope list allows nothing of that kind", () => {
    expect(policy({ config: { agent_scopes: { "agent-a": { action_names: [] } } } })).toBe("agent_scope");
  });

  it("PII to an internal or allowlisted domain is fine", () => {
    const payload = { to: "a@corp.com", body: "ssn 123-45-6789" };
    expect(run({ payload, config: { internal_domains: ["corp.com"] } }).triggers).toEqual([]);
    expect(run({ payload, config: { external_domains_allowlist: ["corp.com"] } }).triggers).toEqual([]);
  });

  it("deletion of many records names bulk_deletion before bulk_operation", () => {
    const ev = run({ action: { action_name: "purge" }, payload: { record_count: 500 } });
    expect(ev.decision.policy_name).toBe("bulk_deletion");
    expect(ev.triggers.map((t) => t.kind)).toEqual(["bulk_deletion", "bulk_operation"]);
  });

  it("docs_url is built from docsBaseUrl for built-ins only", () => {
    expect(
      run({ payload: { amount: 6000 }, docsBaseUrl: "https://docs.example/policy" }).decision.docs_url,
    ).toBe("https://docs.example/policy#financial_approval_threshold");
    expect(run({ payload: { amount: 6000 } }).decision.docs_url).toBeNull();
    const custom = rule({ name: "r", outcome: "deny", docs_url: null });
    expect(
      run({ config: { custom_rules: [custom] }, docsBaseUrl: "https://d" }).decision.docs_url,
    ).toBeNull();
  });
});

describe("nested payload keys never trigger", () => {
  it.each<[string, Record<string, unknown>]>([
    ["amount", { payment: { amount_usd: 1_000_000 } }],
    ["destination", { message: { to: "a@evil.com", url: "https://evil.com" } }],
    ["record count", { batch: { record_count: 100_000, records: Array(500).fill(1) } }],
    ["irreversible flag", { meta: { irreversible: true, tags: ["irreversible"] } }],
    ["PII", { body: { ssn: "123-45-6789" }, url: "https://x.com" }],
  ])("%s", (_name, payload) => {
    const ev = run({ payload, chain: { agents_with_external_communication: ["agent-a"] } });
    expect(ev.triggers.filter((t) => t.outcome !== "allow_with_flag")).toEqual([]);
  });
});

describe("custom rules", () => {
  it.each<[string, CustomRule["match"], boolean]>([
    ["empty match matches all", {}, true],
    ["agent glob", { agent_name: "agent-*" }, true],
    ["agent mismatch", { agent_name: "other" }, false],
    ["agent is case-sensitive", { agent_name: "AGENT-A" }, false],
    ["action_type", { action_type: "tool_call" }, true],
    ["action_name glob", { action_name: "send_*" }, true],
    ["action_name mismatch", { action_name: "read_*" }, false],
    ["domain glob, case-insensitive", { destination_domain: "*.EVIL.com" }, true],
    ["domain matches any recipient", { destination_domain: "other.org" }, true],
    ["domain mismatch", { destination_domain: "good.com" }, false],
    ["payload literal number vs numeric string", { payload: { priority: 3 } }, true],
    ["payload literal string", { payload: { channel: "sms" } }, true],
    ["payload literal mismatch", { payload: { channel: "email" } }, false],
    ["payload gt", { payload: { priority: { gt: 2 } } }, true],
    ["payload lte fails", { payload: { priority: { lte: 2 } } }, false],
    ["payload in", { payload: { channel: { in: ["sms", "voice"] } } }, true],
    ["payload exists", { payload: { channel: { exists: true } } }, true],
    ["payload not exists", { payload: { missing: { exists: false } } }, true],
    ["payload contains string", { payload: { subject: { contains: "invoice" } } }, true],
    ["payload contains array", { payload: { labels: { contains: "vip" } } }, true],
    ["payload nested key is not top-level", { payload: { inner: { exists: true } } }, false],
    ["all matchers AND", { agent_name: "agent-a", action_name: "nope" }, false],
  ])("%s", (_name, match, expected) => {
    const a = action({
      action_name: "send_sms",
      payload: {
        to: ["x@mail.evil.com", "y@other.org"],
        priority: "3",
        channel: "sms",
        subject: "your invoice",
        labels: ["vip"],
        meta: { inner: 1 },
      },
    });
    expect(customRuleMatches(rule({ match }), a, extractFacts(a, config()))).toBe(expected);
  });

  it("a domain matcher never matches an action without a destination", () => {
    const a = action();
    expect(
      customRuleMatches(rule({ match: { destination_domain: "*" } }), a, extractFacts(a, config())),
    ).toBe(false);
  });

  it.each<[PayloadCondition, unknown, boolean]>([
    [5, 5, true],
    [5, "5", true],
    [5, "five", false],
    ["5", 5, false],
    [true, true, true],
    [true, "true", false],
    [{ gt: 1, lt: 3 }, 2, true],
    [{ gt: 1, lt: 3 }, 3, false],
    [{ gte: 3 }, 3, true],
    [{ gt: 0 }, undefined, false],
    [{ eq: "a" }, "a", true],
    [{ in: [1, "b"] }, "1", true],
    [{ in: [1, "b"] }, "c", false],
    [{ exists: false }, undefined, true],
    [{ exists: false }, null, false],
    [{ contains: "x" }, 5, false],
  ])("condition %o on %o → %s", (condition, value, expected) => {
    expect(conditionHolds(condition, value)).toBe(expected);
  });

  it("uses the rule's reason, remediation and docs_url", () => {
    const r = rule({
      name: "no-sms",
      reason: "SMS is off",
      remediation: "Use email",
      docs_url: "https://d/sms",
    });
    expect(run({ config: { custom_rules: [r] } }).decision).toMatchObject({
      policy_decision: "deny",
      policy_name: "no-sms",
      decision_reason: "SMS is off",
      remediation: "Use email",
      docs_url: "https://d/sms",
    });
  });

  it("an empty reason gets a default naming the rule", () => {
    expect(run({ config: { custom_rules: [rule({ name: "r1" })] } }).decision.decision_reason).toContain(
      "r1",
    );
  });

  it("a custom rule beats a built-in of the same severity; an allow rule never lowers the outcome", () => {
    const approve = rule({ name: "custom-approve", outcome: "require_approval" });
    const allow = rule({ name: "custom-allow", outcome: "allow" });
    expect(policy({ payload: { amount: 6000 }, config: { custom_rules: [approve] } })).toBe("custom-approve");
    expect(outcome({ payload: { amount: 6000 }, config: { custom_rules: [allow] } })).toBe(
      "require_approval",
    );
    expect(run({ config: { custom_rules: [allow] } }).decision).toMatchObject({
      policy_decision: "allow",
      policy_name: "custom-allow",
    });
  });
});

describe("globMatch", () => {
  it.each([
    ["*", "", true],
    ["*", "anything", true],
    ["a*c", "abbbc", true],
    ["a*c", "abbb", false],
    ["*.evil.com", "x.evil.com", true],
    ["a**b", "ab", true],
    ["abc", "abc", true],
    ["abc", "abcd", false],
    ["a.c", "abc", false],
    ["*a*a*a*a*a*b", "a".repeat(2000), false],
  ])("%s ~ %s → %s", (pattern, text, expected) => {
    expect(globMatch(pattern, text)).toBe(expected);
  });
});

describe("precedence", () => {
  const denyRule = rule({ name: "deny-all", outcome: "deny" });
  const everything: Scenario = {
    org: {
      kill_switch: { active: true, reason: "incident 42" },
      pause: { active: true, reason: "maintenance" },
    },
    chain: { event_count: 1000 },
    config: { custom_rules: [denyRule], high_risk_agents: ["agent-a"] },
    payload: { amount: 6000, to: "a@evil.com" },
  };

  it.each<[string, Scenario, string, string]>([
    ["kill switch beats all", everything, "deny", "kill_switch"],
    [
      "runaway beats pause",
      { ...everything, org: { pause: everything.org!.pause! } },
      "deny",
      "runaway_limits",
    ],
    [
      "pause beats deny rule",
      { ...everything, org: { pause: everything.org!.pause! }, chain: {} },
      "deny",
      "org_pause",
    ],
    ["deny rule beats approval", { ...everything, org: {}, chain: {} }, "deny", "deny-all"],
    [
      "approval beats flag",
      {
        payload: { amount: 6000, to: "a@evil.com" },
        chain: { agents_with_external_communication: ["agent-a"] },
      },
      "require_approval",
      "financial_approval_threshold",
    ],
    [
      "flag beats allow",
      { payload: { to: "a@evil.com" }, chain: { agents_with_external_communication: ["agent-a"] } },
      "allow_with_flag",
      "exfiltration_alert",
    ],
  ])("%s", (_name, s, expectedOutcome, expectedPolicy) => {
    const d = run(s).decision;
    expect([d.policy_decision, d.policy_name]).toEqual([expectedOutcome, expectedPolicy]);
  });

  it("kill switch: reason, flag, and all triggers still listed", () => {
    const ev = run(everything);
    expect(ev.decision).toMatchObject({
      decision_reason: "incident 42",
      kill_switch_active: true,
      pause_reason: "maintenance",
      auto_paused: false,
    });
    expect(ev.triggers.map((t) => t.kind).slice(0, 3)).toEqual([
      "kill_switch",
      "runaway_limits",
      "org_pause",
    ]);
    expect(ev.triggers.map((t) => t.kind)).toContain("financial_approval_threshold");
  });

  it("kill switch without a reason gets a default reason", () => {
    expect(run({ org: { kill_switch: { active: true, reason: null } } }).decision.decision_reason).toMatch(
      /kill switch/,
    );
  });

  it("pause sets pause_reason", () => {
    const d = run({ org: { pause: { active: true, reason: "audit" } } }).decision;
    expect(d).toMatchObject({ policy_decision: "deny", policy_name: "org_pause", pause_reason: "audit" });
    expect(d.decision_reason).toContain("audit");
    expect(run({ org: { pause: { active: true, reason: null } } }).decision.pause_reason).toBeTruthy();
  });

  it("mostSevere keeps the first of equal severity", () => {
    const t = (policy_name: string, o: Trigger["outcome"]): Trigger => ({
      kind: "custom_rule",
      outcome: o,
      reason: "",
      policy_name,
      remediation: null,
      docs_url: null,
    });
    expect(
      mostSevere([t("a", "allow_with_flag"), t("b", "require_approval"), t("c", "require_approval")])
        ?.policy_name,
    ).toBe("b");
    expect(mostSevere([])).toBeNull();
  });
});

describe("runaway limits", () => {
  const llm = { action_type: "llm_call", action_name: "chat" };
  it.each<[string, Scenario, boolean]>([
    ["max_events: the 1000th action passes", { chain: { event_count: 999 } }, false],
    ["max_events: the 1001st action pauses", { chain: { event_count: 1000 } }, true],
    [
      "max_events configured",
      { chain: { event_count: 5 }, config: { runaway_limits: { max_events: 5 } } },
      true,
    ],
    [
      "max_events 0 disables",
      { chain: { event_count: 10 ** 6 }, config: { runaway_limits: { max_events: 0 } } },
      false,
    ],
    ["duration at the limit passes", { chain: { started_at_ms: NOW - 86_400_000 } }, false],
    ["duration over the limit pauses", { chain: { started_at_ms: NOW - 86_400_001 } }, true],
    [
      "duration configured",
      { chain: { started_at_ms: NOW - 61_000 }, config: { runaway_limits: { max_duration_seconds: 60 } } },
      true,
    ],
    [
      "duration 0 disables",
      { chain: { started_at_ms: 0 }, config: { runaway_limits: { max_duration_seconds: 0 } } },
      false,
    ],
    [
      "tokens: this action crosses",
      { chain: { total_tokens: 1_999_990 }, action: llm, payload: { input_tokens: 11 } },
      true,
    ],
    [
      "tokens: reaching exactly passes",
      { chain: { total_tokens: 1_999_990 }, action: llm, payload: { input_tokens: 10 } },
      false,
    ],
    [
      "tokens configured",
      {
        action: llm,
        payload: { usage: { output_tokens: 11 } },
        config: { runaway_limits: { max_tokens: 10 } },
      },
      true,
    ],
    [
      "tokens 0 disables",
      {
        chain: { total_tokens: 10 ** 12 },
        action: llm,
        payload: { input_tokens: 1 },
        config: { runaway_limits: { max_tokens: 0 } },
      },
      false,
    ],
  ])("%s", (_name, s, paused) => {
    const d = run(s).decision;
    expect(d.auto_paused).toBe(paused);
    if (paused) expect(d).toMatchObject({ policy_decision: "deny", policy_name: "runaway_limits" });
  });

  it.each([
    [{ chain: { event_count: 1000 } }, "max_events"],
    [{ chain: { started_at_ms: 0 } }, "max_duration_seconds"],
    [{ chain: { total_tokens: 2_000_001 } }, "max_tokens"],
  ])("the reason names the limit (%#)", (s, limit) => {
    expect(run(s).decision.decision_reason).toContain(limit);
  });

  it("applies in shadow mode", () => {
    const d = run({ chain: { event_count: 1000 }, config: { evaluation_mode: "shadow" } }).decision;
    expect(d).toMatchObject({
      policy_decision: "deny",
      auto_paused: true,
      evaluation_mode: "shadow",
      shadow_decision: "deny",
    });
  });
});

describe("time-boxed exceptions", () => {
  const approval: Scenario = { payload: { to: "a@evil.com" } };
  const scope: ExceptionScope = {
    agent_name: "agent-a",
    action_type: "tool_call",
    destination_domain: "evil.com",
  };

  it("turns require_approval into allow_with_flag and names the exception", () => {
    const ev = run({ ...approval, exceptions: [exception({ ...scope, exception_id: "exc-9" })] });
    expect(ev.decision.policy_decision).toBe("allow_with_flag");
    expect(ev.exception_id).toBe("exc-9");
    expect(ev.decision.decision_reason).toContain("exc-9");
    expect(ev.decision.policy_name).toBe("first_external_communication");
  });

  it("reports the scope an exception would have", () => {
    expect(run(approval).exception_scope).toEqual(scope);
    expect(run({ payload: { amount: 6000 } }).exception_scope).toEqual({
      ...scope,
      destination_domain: null,
    });
  });

  it.each<[string, Partial<typeof scope> & { expires_at_ms?: number }]>([
    ["agent mismatch", { agent_name: "agent-b" }],
    ["action type mismatch", { action_type: "llm_call" }],
    ["domain mismatch", { destination_domain: "other.com" }],
    ["null domain vs a domain", { destination_domain: null }],
    ["expired", { expires_at_ms: NOW - 1 }],
    ["expiring exactly now", { expires_at_ms: NOW }],
  ])("does not apply: %s", (_name, over) => {
    const ev = run({ ...approval, exceptions: [exception({ ...scope, ...over })] });
    expect(ev.decision.policy_decision).toBe("require_approval");
    expect(ev.exception_id).toBeNull();
  });

  it("null domain matches null domain; domains compare case-insensitively", () => {
    expect(run({ payload: { amount: 6000 }, exceptions: [exception()] }).decision.policy_decision).toBe(
      "allow_with_flag",
    );
    const upper = exception({ ...scope, destination_domain: "EVIL.com" });
    expect(run({ ...approval, exceptions: [upper] }).exception_id).toBe("exc-1");
  });

  it("uses the first matching exception in input order", () => {
    const ex = [
      exception({ ...scope, exception_id: "expired", expires_at_ms: NOW - 5 }),
      exception({ ...scope, exception_id: "first" }),
      exception({ ...scope, exception_id: "second" }),
    ];
    expect(run({ ...approval, exceptions: ex }).exception_id).toBe("first");
  });

  it.each<[string, Scenario]>([
    ["deny rule", { ...approval, config: { custom_rules: [rule({ name: "d" })] } }],
    ["deny threshold", { payload: { amount: 100 }, config: { financial_deny_threshold_usd: 50 } }],
    ["kill switch", { ...approval, org: { kill_switch: { active: true, reason: "x" } } }],
  ])("never overrides deny: %s", (_name, s) => {
    const ev = run({
      ...s,
      exceptions: [exception({ destination_domain: s.payload?.to ? "evil.com" : null })],
    });
    expect(ev.decision.policy_decision).toBe("deny");
    expect(ev.exception_id).toBeNull();
  });

  it("is not used for allow or allow_with_flag outcomes", () => {
    expect(run({ exceptions: [exception()] }).exception_id).toBeNull();
  });
});

describe("shadow mode", () => {
  const shadow = { evaluation_mode: "shadow" as const };
  it.each<[string, Scenario, string, string]>([
    ["allow stays allow", {}, "allow", "allow"],
    [
      "flag stays flag",
      { payload: { to: "a@evil.com" }, chain: { agents_with_external_communication: ["agent-a"] } },
      "allow_with_flag",
      "allow_with_flag",
    ],
    ["approval becomes flag", { payload: { amount: 6000 } }, "allow_with_flag", "require_approval"],
    [
      "deny rule becomes flag",
      { config: { custom_rules: [rule({ name: "d" })] } },
      "allow_with_flag",
      "deny",
    ],
    ["kill switch still denies", { org: { kill_switch: { active: true, reason: "k" } } }, "deny", "deny"],
    ["pause still denies", { org: { pause: { active: true, reason: "p" } } }, "deny", "deny"],
    [
      "exception applies in the shadow decision",
      { payload: { amount: 6000 }, exceptions: [exception()] },
      "allow_with_flag",
      "allow_with_flag",
    ],
  ])("%s", (_name, s, decided, shadowDecision) => {
    const d = run({ ...s, config: { ...shadow, ...s.config } }).decision;
    expect(d).toMatchObject({
      policy_decision: decided,
      shadow_decision: shadowDecision,
      evaluation_mode: "shadow",
    });
  });

  it("says it was not enforced and keeps policy_name", () => {
    const d = run({ payload: { amount: 6000 }, config: shadow }).decision;
    expect(d.decision_reason).toMatch(/^Shadow mode/);
    expect(d.policy_name).toBe("financial_approval_threshold");
  });

  it("enforce mode reports evaluation_mode and no shadow decision", () => {
    expect(run({ payload: { amount: 6000 } }).decision).toMatchObject({
      evaluation_mode: "enforce",
      shadow_decision: null,
    });
  });
});

describe("cost estimation and metrics", () => {
  it("sets estimated_cost_usd for llm_call only, whatever the outcome", () => {
    const llm = {
      action: { action_type: "llm_call", action_name: "chat" },
      payload: { model: "m", input_tokens: 1000, output_tokens: 1000 },
    };
    expect(run(llm).decision.estimated_cost_usd).toBeCloseTo(0.018);
    expect(
      run({ ...llm, org: { kill_switch: { active: true, reason: "k" } } }).decision.estimated_cost_usd,
    ).toBeCloseTo(0.018);
    expect(
      run({ ...llm, config: { llm_pricing: { m: { input_per_1k_usd: 1, output_per_1k_usd: 2 } } } }).decision
        .estimated_cost_usd,
    ).toBeCloseTo(3);
    expect(run({ payload: { input_tokens: 1000 } }).decision.estimated_cost_usd).toBeNull();
  });

  it.each<[string, Scenario, object]>([
    [
      "empty",
      {},
      {
        financial_exposure_usd: 0,
        external_communications: 0,
        records_modified: 0,
        domains: [],
        estimated_cost_usd: 0,
        tokens: 0,
      },
    ],
    ["financial (magnitude)", { payload: { amount: -250 } }, { financial_exposure_usd: 250 }],
    [
      "external",
      { payload: { recipients: ["a@corp.com", "b@evil.com"] }, config: { internal_domains: ["corp.com"] } },
      { external_communications: 1, domains: ["evil.com"] },
    ],
    ["records", { payload: { ids: [1, 2, 3] } }, { records_modified: 3 }],
    [
      "llm",
      { action: { action_type: "llm_call" }, payload: { input_tokens: 1000 } },
      { tokens: 1000, estimated_cost_usd: 0.003 },
    ],
  ])("metrics_delta: %s", (_name, s, expected) => {
    expect(run(s).metrics_delta).toMatchObject(expected);
  });
});
