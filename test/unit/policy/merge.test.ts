import { describe, expect, it } from "vitest";
import { ZodError } from "zod";
import { combinePolicies, mergePolicyConfig } from "../../../src/policy/merge.js";
import {
  defaultPolicyConfig,
  type PolicyConfigPatch,
  PolicyConfigPatchSchema,
  PolicyConfigSchema,
} from "../../../src/policy/schema.js";

const base = defaultPolicyConfig();

describe("mergePolicyConfig", () => {
  it("no override returns the base", () => {
    expect(mergePolicyConfig(base)).toEqual(base);
  });

  it.each<[string, PolicyConfigPatch, Record<string, unknown>]>([
    ["scalar", { financial_approval_threshold_usd: 100 }, { financial_approval_threshold_usd: 100 }],
    ["nullable scalar", { financial_deny_threshold_usd: 50 }, { financial_deny_threshold_usd: 50 }],
    ["array replaces", { irreversible_actions: ["wire"] }, { irreversible_actions: ["wire"] }],
    ["enum", { evaluation_mode: "shadow" }, { evaluation_mode: "shadow" }],
    [
      "undefined is not set",
      { financial_approval_threshold_usd: undefined },
      { financial_approval_threshold_usd: 5000 },
    ],
    [
      "runaway_limits per key",
      { runaway_limits: { max_events: 5 } },
      { runaway_limits: { max_events: 5, max_duration_seconds: 86_400, max_tokens: 2_000_000 } },
    ],
    [
      "default_llm_price per key",
      { default_llm_price: { output_per_1k_usd: 1 } },
      { default_llm_price: { input_per_1k_usd: 0.003, output_per_1k_usd: 1 } },
    ],
  ])("%s", (_name, patch, expected) => {
    expect(mergePolicyConfig(base, patch)).toMatchObject(expected);
  });

  it("llm_pricing and agent_scopes merge per model / per agent; an agent's scope is replaced whole", () => {
    const org = mergePolicyConfig(base, {
      llm_pricing: { a: { input_per_1k_usd: 1, output_per_1k_usd: 1 } },
      agent_scopes: { x: { action_types: ["tool_call"], domains: ["a.com"] }, y: { action_names: ["q"] } },
    });
    const merged = mergePolicyConfig(org, {
      llm_pricing: { b: { input_per_1k_usd: 2, output_per_1k_usd: 2 } },
      agent_scopes: { x: { action_names: ["send"] } },
    });
    expect(Object.keys(merged.llm_pricing)).toEqual(["a", "b"]);
    expect(merged.agent_scopes).toEqual({ x: { action_names: ["send"] }, y: { action_names: ["q"] } });
  });

  it("applies overrides in order, the later winning", () => {
    const merged = mergePolicyConfig(
      base,
      { bulk_operation_threshold: 5, bulk_deletion_threshold: 2 },
      { bulk_operation_threshold: 7 },
    );
    expect([merged.bulk_operation_threshold, merged.bulk_deletion_threshold]).toEqual([7, 2]);
  });

  it("validates the result", () => {
    expect(() => mergePolicyConfig(base, { bulk_operation_threshold: -1 })).toThrow(ZodError);
    expect(() => mergePolicyConfig(base, { nope: 1 } as PolicyConfigPatch)).toThrow(ZodError);
  });

  it("does not mutate its arguments", () => {
    const b = defaultPolicyConfig();
    const o: PolicyConfigPatch = { runaway_limits: { max_events: 3 }, external_domains_allowlist: ["a.com"] };
    const [bCopy, oCopy] = [structuredClone(b), structuredClone(o)];
    mergePolicyConfig(b, o);
    expect([b, o]).toEqual([bCopy, oCopy]);
  });

  it("a chain override parsed with PolicyConfigPatchSchema keeps organization settings", () => {
    const org = mergePolicyConfig(base, {
      external_domains_allowlist: ["partner.io"],
      bulk_operation_threshold: 50,
    });
    const chain = PolicyConfigPatchSchema.parse({ financial_approval_threshold_usd: 10 });
    const merged = mergePolicyConfig(org, chain);
    expect(merged).toMatchObject({
      external_domains_allowlist: ["partner.io"],
      bulk_operation_threshold: 50,
      financial_approval_threshold_usd: 10,
    });
  });
});

describe("PolicyConfigPatchSchema", () => {
  it("has exactly the keys of PolicyConfigSchema", () => {
    expect(Object.keys(PolicyConfigPatchSchema.shape).sort()).toEqual(
      Object.keys(PolicyConfigSchema.shape).sort(),
    );
  });
  it("fills in no defaults", () => {
    expect(PolicyConfigPatchSchema.parse({})).toEqual({});
    expect(PolicyConfigPatchSchema.parse({ runaway_limits: { max_tokens: 5 } })).toEqual({
      runaway_limits: { max_tokens: 5 },
    });
  });
  it("keeps the constraints", () => {
    expect(PolicyConfigPatchSchema.safeParse({ bulk_operation_threshold: 0 }).success).toBe(false);
    expect(PolicyConfigPatchSchema.safeParse({ external_domains_allowlist: ["not a domain"] }).success).toBe(
      false,
    );
    expect(PolicyConfigPatchSchema.safeParse({ unknown: 1 }).success).toBe(false);
  });
});

describe("combinePolicies", () => {
  const rule = (name: string) => ({ name, match: {}, outcome: "deny" as const, reason: "" });

  it("sorts by name: later name wins scalars, regardless of input order", () => {
    const policies = [
      { name: "b", config: { financial_approval_threshold_usd: 200 } },
      { name: "a", config: { financial_approval_threshold_usd: 100, bulk_operation_threshold: 9 } },
    ];
    expect(combinePolicies(policies)).toEqual({
      financial_approval_threshold_usd: 200,
      bulk_operation_threshold: 9,
    });
    expect(combinePolicies([...policies].reverse())).toEqual(combinePolicies(policies));
  });

  it.each([
    ["external_domains_allowlist", ["a.com", "b.com"], ["b.com", "c.com"]],
    ["internal_domains", ["a.com"], ["a.com", "b.com"]],
    ["high_risk_agents", ["x"], ["y"]],
    ["irreversible_actions", ["sign"], ["file", "sign"]],
    ["financial_notify", ["a@x.com"], ["b@x.com"]],
  ] as const)("unions %s", (key, first, second) => {
    const combined = combinePolicies([
      { name: "p2", config: { [key]: second } },
      { name: "p1", config: { [key]: first } },
    ]) as Record<string, unknown>;
    expect(combined[key]).toEqual([...new Set([...first, ...second])]);
  });

  it("concatenates custom rules in name order", () => {
    const combined = combinePolicies([
      { name: "z", config: { custom_rules: [rule("z1")] } },
      { name: "a", config: { custom_rules: [rule("a1"), rule("a2")] } },
    ]);
    expect(combined.custom_rules?.map((r) => r.name)).toEqual(["a1", "a2", "z1"]);
  });

  it("merges agent_scopes per agent, the later name winning per agent", () => {
    const combined = combinePolicies([
      { name: "a", config: { agent_scopes: { x: { action_types: ["t1"] }, y: { action_types: ["t2"] } } } },
      { name: "b", config: { agent_scopes: { x: { action_names: ["n"] } } } },
    ]);
    expect(combined.agent_scopes).toEqual({ x: { action_names: ["n"] }, y: { action_types: ["t2"] } });
  });

  it("merges runaway_limits and llm_pricing per key", () => {
    const price = { input_per_1k_usd: 1, output_per_1k_usd: 1 };
    const combined = combinePolicies([
      { name: "a", config: { runaway_limits: { max_events: 1, max_tokens: 2 }, llm_pricing: { m1: price } } },
      { name: "b", config: { runaway_limits: { max_events: 3 }, llm_pricing: { m2: price } } },
    ]);
    expect(combined.runaway_limits).toEqual({ max_events: 3, max_tokens: 2 });
    expect(Object.keys(combined.llm_pricing ?? {})).toEqual(["m1", "m2"]);
  });

  it("ignores undefined values and an empty list", () => {
    expect(combinePolicies([])).toEqual({});
    expect(combinePolicies([{ name: "a", config: { bulk_operation_threshold: undefined } }])).toEqual({});
  });

  it("feeds mergePolicyConfig", () => {
    const combined = combinePolicies([
      { name: "a", config: { external_domains_allowlist: ["a.com"] } },
      { name: "b", config: { external_domains_allowlist: ["b.com"], evaluation_mode: "shadow" } },
    ]);
    expect(mergePolicyConfig(base, combined)).toMatchObject({
      external_domains_allowlist: ["a.com", "b.com"],
      evaluation_mode: "shadow",
      bulk_operation_threshold: 100,
    });
  });

  it("does not mutate its input", () => {
    const policies = [
      { name: "b", config: { high_risk_agents: ["x"] } },
      { name: "a", config: { high_risk_agents: ["y"] } },
    ];
    const copy = structuredClone(policies);
    combinePolicies(policies);
    expect(policies).toEqual(copy);
  });
});
