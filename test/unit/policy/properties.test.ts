import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type EvaluationInput, evaluate, SEVERITY } from "../../../src/policy/engine.js";
import { mergePolicyConfig } from "../../../src/policy/merge.js";
import {
  DEFAULT_API_KEY_PREFIX,
  DEFAULT_SENSITIVE_VALUE_PREFIXES,
  sanitizePayload,
} from "../../../src/policy/sanitize.js";
import {
  type AgentScope,
  CustomRuleSchema,
  type PolicyConfigPatch,
  PolicyDecisionSchema,
} from "../../../src/policy/schema.js";
import { chain, config, exception, NOW } from "./helpers.js";

const DOMAINS = [
  "corp.com",
  "mail.corp.com",
  "partner.io",
  "api.partner.io",
  "evil.com",
  "x.evil.com",
  "other.org",
];
const AGENTS = ["agent-a", "agent-b", "risky"];

const domainArb = fc.constantFrom(...DOMAINS);
const agentArb = fc.constantFrom(...AGENTS);

/** Payloads built from the keys the engine reads, plus noise. */
const payloadArb = fc.record(
  {
    amount: fc.oneof(fc.integer({ min: -20_000, max: 20_000 }), fc.constant("6000"), fc.constant("abc")),
    to: fc.oneof(
      domainArb.map((d) => `someone@${d}`),
      fc.array(
        domainArb.map((d) => `x@${d}`),
        { maxLength: 3 },
      ),
    ),
    url: domainArb.map((d) => `https://${d}/hook`),
    record_count: fc.integer({ min: 0, max: 300 }),
    ids: fc.array(fc.integer(), { maxLength: 20 }),
    body: fc.constantFrom("hello", "ssn 123-45-6789", "card 4111 1111 1111 1111", "call +14155550100"),
    irreversible: fc.boolean(),
    input_tokens: fc.integer({ min: 0, max: 100_000 }),
    nested: fc.record({ amount: fc.integer({ min: 0, max: 1e6 }) }),
  },
  { requiredKeys: [] },
);

const patchArb: fc.Arbitrary<PolicyConfigPatch> = fc.record(
  {
    financial_approval_threshold_usd: fc.integer({ min: 0, max: 20_000 }),
    cumulative_financial_threshold_usd: fc.integer({ min: 0, max: 50_000 }),
    financial_deny_threshold_usd: fc.option(fc.integer({ min: 0, max: 50_000 }), { nil: null }),
    external_domains_allowlist: fc.subarray(DOMAINS),
    internal_domains: fc.subarray(DOMAINS),
    high_risk_agents: fc.subarray(["risky"]),
    first_external_communication_requires_approval: fc.boolean(),
    bulk_operation_threshold: fc.integer({ min: 1, max: 300 }),
    bulk_deletion_threshold: fc.integer({ min: 1, max: 50 }),
    pii_to_external_requires_approval: fc.boolean(),
    evaluation_mode: fc.constantFrom("enforce" as const, "shadow" as const),
    agent_scopes: fc.constantFrom<Record<string, AgentScope>>(
      {},
      { "agent-b": { action_types: ["tool_call"], domains: ["partner.io"] } },
    ),
  },
  { requiredKeys: [] },
);

const inputArb: fc.Arbitrary<EvaluationInput> = fc
  .record({
    patch: patchArb,
    agent: agentArb,
    action_type: fc.constantFrom("tool_call", "llm_call", "financial"),
    action_name: fc.constantFrom("send_email", "delete_rows", "sign_contract", "lookup"),
    payload: payloadArb,
    exposure: fc.integer({ min: 0, max: 30_000 }),
    talked: fc.subarray(AGENTS),
    killed: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    exceptionDomain: fc.option(domainArb, { nil: null }),
  })
  .map((r) => ({
    config: config(r.patch),
    org: { kill_switch: { active: r.killed, reason: "k" }, pause: { active: false, reason: null } },
    chain: chain({ financial_exposure_usd: r.exposure, agents_with_external_communication: r.talked }),
    action: {
      agent_name: r.agent,
      action_type: r.action_type,
      action_name: r.action_name,
      payload: r.payload,
    },
    exceptions: [
      exception({ agent_name: r.agent, action_type: r.action_type, destination_domain: r.exceptionDomain }),
    ],
    nowMs: NOW,
  }));

const severity = (input: EvaluationInput): number => {
  const d = evaluate(input).decision;
  return SEVERITY[d.shadow_decision ?? d.policy_decision];
};

describe("policy engine properties", () => {
  it("raising financial_approval_threshold_usd never makes the outcome more severe", () => {
    fc.assert(
      fc.property(inputArb, fc.integer({ min: 0, max: 20_000 }), (input, raise) => {
        const raised = {
          ...input,
          config: mergePolicyConfig(input.config, {
            financial_approval_threshold_usd: input.config.financial_approval_threshold_usd + raise,
          }),
        };
        expect(severity(raised)).toBeLessThanOrEqual(severity(input));
        if (evaluate(input).decision.policy_decision === "allow") {
          expect(evaluate(raised).decision.policy_decision).not.toBe("require_approval");
        }
      }),
      { numRuns: 500 },
    );
  });

  it("adding a deny custom rule that matches the action always yields deny in enforce mode", () => {
    fc.assert(
      fc.property(inputArb, fc.constantFrom("all", "agent", "action"), (input, how) => {
        const match =
          how === "all"
            ? {}
            : how === "agent"
              ? { agent_name: input.action.agent_name }
              : {
                  action_type: input.action.action_type,
                  action_name: `${input.action.action_name.slice(0, 3)}*`,
                };
        const denyRule = CustomRuleSchema.parse({ name: "deny-it", match, outcome: "deny" });
        const withRule = {
          ...input,
          config: mergePolicyConfig(input.config, {
            evaluation_mode: "enforce",
            custom_rules: [...input.config.custom_rules, denyRule],
          }),
        };
        const d = evaluate(withRule).decision;
        expect(d.policy_decision).toBe("deny");
        expect(["deny-it", "kill_switch", "runaway_limits", "org_pause"]).toContain(d.policy_name);
      }),
      { numRuns: 500 },
    );
  });

  it("adding a domain to the allowlist never makes the outcome more severe", () => {
    fc.assert(
      fc.property(inputArb, domainArb, (input, domain) => {
        const widened = {
          ...input,
          config: mergePolicyConfig(input.config, {
            external_domains_allowlist: [...input.config.external_domains_allowlist, domain],
          }),
        };
        expect(severity(widened)).toBeLessThanOrEqual(severity(input));
      }),
      { numRuns: 500 },
    );
  });

  it("evaluate never throws on arbitrary JSON payloads and always returns a valid decision", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.string({ minLength: 1 }),
        fc.constantFrom("tool_call", "llm_call", "financial", "state_update"),
        fc.string({ minLength: 1 }),
        patchArb,
        (payload, agent_name, action_type, action_name, patch) => {
          const ev = evaluate({
            config: config(patch),
            org: { kill_switch: { active: false, reason: null }, pause: { active: false, reason: null } },
            chain: chain(),
            action: { agent_name, action_type, action_name, payload },
            exceptions: [],
            nowMs: NOW,
          });
          PolicyDecisionSchema.parse(ev.decision);
          expect(JSON.parse(JSON.stringify(ev.metrics_delta))).toEqual(ev.metrics_delta);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("evaluate never throws on payloads keyed with the keys the engine reads", () => {
    const keys = [
      "amount_usd",
      "amount",
      "value",
      "domain",
      "destination_domain",
      "url",
      "endpoint",
      "webhook_url",
      "to",
      "email",
      "recipient",
      "recipients",
      "cc",
      "bcc",
      "record_count",
      "records_count",
      "count",
      "records",
      "ids",
      "items",
      "operation",
      "op",
      "irreversible",
      "tags",
      "input_tokens",
      "prompt_tokens",
      "output_tokens",
      "completion_tokens",
      "usage",
      "model",
      "__proto__",
      "constructor",
      "toString",
    ];
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...keys), fc.jsonValue()), (payload) => {
        const ev = evaluate({
          config: config(),
          org: { kill_switch: { active: false, reason: null }, pause: { active: false, reason: null } },
          chain: chain(),
          action: { agent_name: "a", action_type: "llm_call", action_name: "x", payload },
          exceptions: [],
          nowMs: NOW,
        });
        PolicyDecisionSchema.parse(ev.decision);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("sanitize properties", () => {
  const prefixes = [...DEFAULT_SENSITIVE_VALUE_PREFIXES, DEFAULT_API_KEY_PREFIX];
  const secretish = fc
    .tuple(fc.constantFrom(...prefixes), fc.string())
    .map(([prefix, rest]) => prefix + rest);
  const leaf = fc.oneof(fc.string(), secretish, fc.integer(), fc.boolean(), fc.constant(null));
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      leaf,
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(fc.string(), tie("value"), { maxKeys: 4 }),
    ),
  }));

  const strings = (v: unknown): string[] =>
    typeof v === "string"
      ? [v]
      : Array.isArray(v)
        ? v.flatMap(strings)
        : typeof v === "object" && v !== null
          ? Object.values(v).flatMap(strings)
          : [];

  it("output never contains a value starting with a default prefix", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), value),
        fc.integer({ min: 1, max: 50 }),
        (payload, maxStringLength) => {
          const { payload: out } = sanitizePayload(payload, { maxStringLength });
          for (const s of strings(out)) {
            expect(prefixes.some((p) => s.startsWith(p))).toBe(false);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("never mutates input and output strings respect maxStringLength", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), value),
        fc.integer({ min: 1, max: 50 }),
        (payload, maxStringLength) => {
          const before = JSON.stringify(payload);
          const { payload: out } = sanitizePayload(payload, { maxStringLength });
          expect(JSON.stringify(payload)).toBe(before);
          for (const s of strings(out)) {
            expect(s.length).toBeLessThanOrEqual(
              Math.max(maxStringLength + "…[truncated]".length, "[TRUNCATED_DEPTH]".length),
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
