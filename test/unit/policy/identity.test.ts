/**
 * Workload identity in policy (issue 27): custom rules' identities / service_accounts matchers,
 * agent scopes restricted to identities, and organization-level pinning (identity_agent_names).
 */
import { describe, expect, it } from "vitest";
import { identityMatches, serviceAccountPatternMatches } from "../../../src/policy/engine.js";
import { combinePolicies } from "../../../src/policy/merge.js";
import { PolicyConfigPatchSchema } from "../../../src/policy/schema.js";
import { config, exception, identity, run, type Scenario } from "./helpers.js";

const invoice = identity("payments", "invoice-agent");
const refund = identity("payments", "refund-agent");
const crawler = identity("web", "crawler");

describe("identity matchers (AccessPolicy Source semantics)", () => {
  it("service account patterns: ns/name exactly, ns/* the whole namespace", () => {
    expect(serviceAccountPatternMatches("payments/invoice-agent", invoice)).toBe(true);
    expect(serviceAccountPatternMatches("payments/invoice-agent", refund)).toBe(false);
    expect(serviceAccountPatternMatches("payments/*", refund)).toBe(true);
    expect(serviceAccountPatternMatches("payments/*", crawler)).toBe(false);
    expect(serviceAccountPatternMatches("payment/*", invoice)).toBe(false);
  });
  it("OR across identities and service_accounts; no matcher matches everyone; null never matches", () => {
    const m = { identities: [crawler.spiffe_id], service_accounts: ["payments/invoice-agent"] };
    expect(identityMatches(m, crawler)).toBe(true);
    expect(identityMatches(m, invoice)).toBe(true);
    expect(identityMatches(m, refund)).toBe(false);
    expect(identityMatches(m, null)).toBe(false);
    expect(identityMatches({ identities: [] }, invoice)).toBe(false);
    expect(identityMatches({}, null)).toBe(true);
  });
  it("SPIFFE IDs match exactly (another trust domain is another identity)", () => {
    expect(identityMatches({ identities: [invoice.spiffe_id] }, invoice)).toBe(true);
    const other = { ...invoice, spiffe_id: "spiffe://other.example/ns/payments/sa/invoice-agent" };
    expect(identityMatches({ identities: [invoice.spiffe_id] }, other)).toBe(false);
  });
});

describe("custom rules with identity matchers", () => {
  const s = (id: Scenario["identity"], match: Record<string, unknown>): Scenario => ({
    config: { custom_rules: [{ name: "payments-only", match, outcome: "deny", reason: "no" }] },
    identity: id,
  });
  it("match the listed identities, AND the other matchers", () => {
    const match = { service_accounts: ["payments/*"], action_name: "lookup" };
    expect(run(s(refund, match)).decision.policy_name).toBe("payments-only");
    expect(run(s(crawler, match)).decision.policy_decision).toBe("allow");
    expect(run(s(refund, { ...match, action_name: "other" })).decision.policy_decision).toBe("allow");
  });
  it("never match a caller without identity", () => {
    expect(run(s(null, { service_accounts: ["payments/*"] })).decision.policy_decision).toBe("allow");
    expect(run(s(undefined, { identities: [invoice.spiffe_id] })).decision.policy_decision).toBe("allow");
  });
  it("the config refuses a bare name, * alone, and a non-SPIFFE identity", () => {
    for (const match of [
      { service_accounts: ["invoice-agent"] },
      { service_accounts: ["*"] },
      { service_accounts: ["*/*"] },
      { identities: ["payments/invoice-agent"] },
    ]) {
      const r = PolicyConfigPatchSchema.safeParse({ custom_rules: [{ name: "r", match, outcome: "deny" }] });
      expect(r.success, JSON.stringify(match)).toBe(false);
    }
  });
});

describe("agent scopes restricted to identities", () => {
  const scoped = (id: Scenario["identity"]): Scenario => ({
    config: {
      agent_scopes: {
        "invoice-bot": { service_accounts: ["payments/invoice-agent"], identities: [crawler.spiffe_id] },
      },
    },
    action: { agent_name: "invoice-bot" },
    identity: id,
  });
  it("admit the listed identities", () => {
    expect(run(scoped(invoice)).decision.policy_decision).toBe("allow");
    expect(run(scoped(crawler)).decision.policy_decision).toBe("allow");
  });
  it("any other identity is a scope violation (require_approval, agent_scope)", () => {
    const d = run(scoped(refund)).decision;
    expect(d).toMatchObject({ policy_decision: "require_approval", policy_name: "agent_scope" });
    expect(d.decision_reason).toBe(
      `workload identity payments/refund-agent (${refund.spiffe_id}) is outside the declared scope of agent invoice-bot`,
    );
  });
  it("so is a caller without identity", () => {
    const d = run(scoped(null)).decision;
    expect(d.policy_decision).toBe("require_approval");
    expect(d.decision_reason).toMatch(/^a caller without a verified workload identity is outside/);
  });
  it("other agents' scopes and unscoped agents are unaffected", () => {
    expect(run({ ...scoped(refund), action: { agent_name: "other" } }).decision.policy_decision).toBe(
      "allow",
    );
  });
});

describe("identity_agent_names (organization-level pinning)", () => {
  const pins = {
    "payments/invoice-agent": ["invoice-bot"],
    "payments/*": ["payments-*"],
  };
  const pinned = (id: Scenario["identity"], agent: string, extra: Scenario = {}): Scenario => ({
    ...extra,
    config: { identity_agent_names: pins, ...extra.config },
    action: { agent_name: agent, ...extra.action },
    identity: id,
  });
  it("allows the pinned agent names (globs)", () => {
    expect(run(pinned(invoice, "invoice-bot")).decision.policy_decision).toBe("allow");
    expect(run(pinned(refund, "payments-refunds")).decision.policy_decision).toBe("allow");
  });
  it("denies any other agent name, with a clear reason and policy_name", () => {
    const d = run(pinned(invoice, "payments-admin")).decision;
    expect(d).toMatchObject({
      policy_decision: "deny",
      policy_name: "identity_agent_names",
      decision_reason: `Workload identity payments/invoice-agent (${invoice.spiffe_id}) may act only as agent invoice-bot (identity_agent_names["payments/invoice-agent"]); the action names agent payments-admin`,
    });
    expect(run(pinned(refund, "invoice-bot")).decision.policy_decision).toBe("deny");
  });
  it("the exact entry wins over the namespace entry", () => {
    // payments-* would admit "payments-x" under payments/*, but invoice-agent has its own entry
    expect(run(pinned(invoice, "payments-x")).decision.policy_decision).toBe("deny");
  });
  it("does not affect callers without identity or identities without an entry", () => {
    expect(run(pinned(null, "anything")).decision.policy_decision).toBe("allow");
    expect(run(pinned(crawler, "anything")).decision.policy_decision).toBe("allow");
  });
  it("is reported before custom rules and is not lifted by an exception", () => {
    const d = run(
      pinned(invoice, "other", {
        config: { custom_rules: [{ name: "c", match: {}, outcome: "deny", reason: "custom" }] },
        exceptions: [exception({ agent_name: "other" })],
      }),
    ).decision;
    expect(d.policy_name).toBe("identity_agent_names");
    expect(d.policy_decision).toBe("deny");
  });
  it("is validated (keys are service account patterns, lists not empty) and merged per key across policies", () => {
    expect(
      PolicyConfigPatchSchema.safeParse({ identity_agent_names: { "invoice-agent": ["a"] } }).success,
    ).toBe(false);
    expect(PolicyConfigPatchSchema.safeParse({ identity_agent_names: { "payments/*": [] } }).success).toBe(
      false,
    );
    const combined = combinePolicies([
      { name: "a", config: { identity_agent_names: { "payments/*": ["p-*"], "web/crawler": ["crawler"] } } },
      { name: "b", config: { identity_agent_names: { "payments/*": ["payments-*"] } } },
    ]);
    expect(config(combined).identity_agent_names).toEqual({
      "payments/*": ["payments-*"],
      "web/crawler": ["crawler"],
    });
  });
});
