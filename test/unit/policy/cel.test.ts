/** CEL expressions in custom rules: the engine's decisions, the variables, the bounds, write-time refusal. */

import { run as celRun, isCelError } from "@bufbuild/cel";
import { describe, expect, it } from "vitest";
import { CEL_LIMITS, celBindings, compileExpression, evaluateExpression } from "../../../src/policy/cel.js";
import { sanitizePayload } from "../../../src/policy/sanitize.js";
import {
  type CustomRule,
  configUsesChainActions,
  PolicyConfigPatchSchema,
} from "../../../src/policy/schema.js";
import { config, identity, NOW, run, type Scenario } from "./helpers.js";

const rule = (expression: string, extra: Partial<CustomRule> = {}): CustomRule => ({
  name: "cel-rule",
  match: {},
  expression,
  outcome: "deny" as const,
  reason: "CEL rule matched",
  ...extra,
});
const decide = (expression: string, s: Scenario = {}, extra: Partial<CustomRule> = {}) =>
  run({ ...s, config: { ...s.config, custom_rules: [rule(expression, extra)] } }).decision;

describe("example: action.payload.invoice.total > 1000", () => {
  const expr = "action.payload.invoice.total > 1000";
  it("applies the rule's outcome above 1000, at any depth of the payload", () => {
    const d = decide(expr, { payload: { invoice: { total: 1500.5, lines: [] } } });
    expect(d).toMatchObject({
      policy_decision: "deny",
      policy_name: "cel-rule",
      decision_reason: "CEL rule matched",
    });
  });
  it("does not apply at 1000 or below", () => {
    expect(decide(expr, { payload: { invoice: { total: 1000 } } }).policy_decision).toBe("allow");
    expect(decide(expr, { payload: { invoice: { total: 3 } } }).policy_name).toBeNull();
  });
  it("fails closed (require_approval, error in the reason) when the payload has no invoice", () => {
    const d = decide(expr, { payload: { other: 1 } });
    expect(d.policy_decision).toBe("require_approval");
    expect(d.policy_name).toBe("cel-rule");
    expect(d.decision_reason).toMatch(/^Custom rule cel-rule: the CEL expression could not be evaluated/);
    expect(d.decision_reason).toContain("invoice");
  });
  it("fails closed with deny when expression_error_outcome is deny, even for an allow rule", () => {
    const d = run({
      config: {
        expression_error_outcome: "deny",
        custom_rules: [rule(expr, { outcome: "allow" })],
      },
      payload: { invoice: { total: "lots" } },
    }).decision;
    expect(d.policy_decision).toBe("deny");
    expect(d.decision_reason).toMatch(/no matching overload/);
  });
  it("a sanitized payload is evaluated as sent (redacted values stay strings; a 'constructor' key is a key)", () => {
    const { payload } = sanitizePayload({ invoice: { total: 2000, api_key: "sk-123" }, constructor: "x" });
    expect(decide(expr, { payload: payload as Record<string, unknown> }).policy_decision).toBe("deny");
    expect(
      decide('action.payload.constructor == "x"', { payload: payload as Record<string, unknown> })
        .policy_decision,
    ).toBe("deny");
  });
});

describe('example: identity.serviceAccount == "payments/invoice-agent"', () => {
  const expr = 'identity.serviceAccount == "payments/invoice-agent"';
  it("applies for that identity only", () => {
    expect(decide(expr, { identity: identity("payments", "invoice-agent") }).policy_decision).toBe("deny");
    expect(decide(expr, { identity: identity("payments", "refund-agent") }).policy_decision).toBe("allow");
  });
  it("fails closed for a caller without identity (selecting a field of null is an error)", () => {
    const d = decide(expr, { identity: null });
    expect(d.policy_decision).toBe("require_approval");
    expect(d.decision_reason).toMatch(/could not be evaluated/);
  });
  it("`identity != null && …` is the way to never match a caller without identity", () => {
    expect(decide(`identity != null && ${expr}`, { identity: null }).policy_decision).toBe("allow");
    expect(decide(`identity != null && ${expr}`, { identity: identity() }).policy_decision).toBe("deny");
  });
  it("exposes every identity field", () => {
    const id = identity("payments", "invoice-agent");
    const all = [
      'identity.namespace == "payments"',
      `identity.spiffeId == "${id.spiffe_id}"`,
      `identity.podName == "${id.pod_name}"`,
      `identity.podUid == "${id.pod_uid}"`,
    ].join(" && ");
    expect(decide(all, { identity: id }).policy_decision).toBe("deny");
    expect(decide("identity.podName == null", { identity: { ...id, pod_name: null } }).policy_decision).toBe(
      "deny",
    );
  });
});

describe('example: chain.actions.exists(a, a.name == "read_customer") && action.name == "send_email"', () => {
  const expr = 'chain.actions.exists(a, a.name == "read_customer") && action.name == "send_email"';
  const earlier = (...names: string[]) =>
    names.map((name) => ({ name, type: "tool_call", agent_name: "agent-a" }));
  it("applies to send_email after read_customer", () => {
    const d = decide(expr, {
      chain: { event_count: 2, actions_so_far: earlier("lookup", "read_customer") },
      action: { action_name: "send_email" },
    });
    expect(d.policy_decision).toBe("deny");
  });
  it("does not apply without read_customer before, nor to another action", () => {
    expect(
      decide(expr, { chain: { actions_so_far: earlier("lookup") }, action: { action_name: "send_email" } })
        .policy_decision,
    ).toBe("allow");
    expect(
      decide(expr, { chain: { actions_so_far: earlier("read_customer") }, action: { action_name: "lookup" } })
        .policy_decision,
    ).toBe("allow");
  });
  it("fails closed when the caller did not supply the chain's actions", () => {
    const d = decide(expr, { action: { action_name: "send_email" } });
    expect(d.policy_decision).toBe("require_approval");
    expect(d.decision_reason).toMatch(/actions/);
  });
  it("configUsesChainActions tells the caller when to supply them", () => {
    expect(configUsesChainActions(config({ custom_rules: [rule(expr)] }))).toBe(true);
    expect(configUsesChainActions(config({ custom_rules: [rule("chain.eventCount > 1")] }))).toBe(false);
    expect(configUsesChainActions(config())).toBe(false);
  });
});

describe("the other variables", () => {
  it("action fields, chain counters and age, org environment, now", () => {
    const s: Scenario = {
      action: { agent_name: "bot", action_type: "tool_call", action_name: "post" },
      payload: { url: "https://API.Example.com/x" },
      chain: { event_count: 7, financial_exposure_usd: 12.5, started_at_ms: NOW - 90_000 },
      org: { environment: "staging" },
    };
    for (const expr of [
      'action.agentName == "bot" && action.type == "tool_call" && action.name == "post"',
      'action.destinationDomains == ["api.example.com"]',
      "chain.eventCount == 7 && chain.eventCount + 1 == 8",
      "chain.financialExposureUsd == 12.5",
      "chain.ageSeconds == 90.0",
      'org.environment == "staging"',
      'now == timestamp("2025-01-15T12:00:00Z") && now.getHours() == 12',
    ]) {
      expect(decide(expr, s).policy_decision, expr).toBe("deny");
    }
  });
  it("org.environment fails closed when the caller did not supply it", () => {
    expect(decide('org.environment == "staging"').policy_decision).toBe("require_approval");
  });
  it("a non-bool result fails closed", () => {
    const d = decide("chain.eventCount");
    expect(d.policy_decision).toBe("require_approval");
    expect(d.decision_reason).toMatch(/gave int 0, not a bool/);
  });
});

describe("AND with the other matchers", () => {
  it("the expression is evaluated only when every matcher matched (a failing one cannot fire otherwise)", () => {
    const r = rule("action.payload.missing.key", { match: { action_name: "pay" } });
    expect(
      run({ config: { custom_rules: [r] }, action: { action_name: "read" } }).decision.policy_decision,
    ).toBe("allow");
    expect(
      run({ config: { custom_rules: [r] }, action: { action_name: "pay" } }).decision.policy_decision,
    ).toBe("require_approval");
  });
  it("both must hold", () => {
    const r = rule("action.payload.amount_usd > 10.0", { match: { agent_name: "billing-*" } });
    const s = (agent: string, amount: number): Scenario => ({
      config: { custom_rules: [r], financial_approval_threshold_usd: 1e9 },
      action: { agent_name: agent },
      payload: { amount_usd: amount },
    });
    expect(run(s("billing-1", 20)).decision.policy_decision).toBe("deny");
    expect(run(s("billing-1", 5)).decision.policy_decision).toBe("allow");
    expect(run(s("other", 20)).decision.policy_decision).toBe("allow");
  });
  it("in shadow mode an evaluation error is reported as the shadow decision", () => {
    const d = run({
      config: { evaluation_mode: "shadow", custom_rules: [rule("action.payload.x > 1")] },
    }).decision;
    expect(d).toMatchObject({ policy_decision: "allow_with_flag", shadow_decision: "require_approval" });
  });
});

describe("written expressions are compiled and refused with the rule and the position", () => {
  const issue = (expression: string) => {
    const r = PolicyConfigPatchSchema.safeParse({
      custom_rules: [{ name: "big", expression, outcome: "deny" }],
    });
    expect(r.success).toBe(false);
    const i = r.error?.issues[0];
    return { path: i?.path.join("."), message: i?.message ?? "" };
  };
  it("a syntax error", () => {
    expect(issue("action.payload.total >")).toEqual({
      path: "custom_rules.0.expression",
      message: expect.stringMatching(
        /^custom rule "big": invalid CEL expression: syntax error: .* at line 1, column 22$/,
      ),
    });
  });
  it("an undeclared variable, field or function, on the line where it is", () => {
    expect(issue("action.name == 'x' &&\n  actoin.type == 'y'").message).toMatch(
      /undeclared reference to 'actoin' .* at line 2, column 3$/,
    );
    expect(issue("action.nmae == 'x'").message).toMatch(/'action' has no field 'nmae'/);
    expect(issue("identity.serviceaccount == 'x'").message).toMatch(
      /'identity' has no field 'serviceaccount'/,
    );
    expect(issue("lookup(action.name)").message).toMatch(/undeclared reference to function 'lookup'/);
  });
  it("a literal regular expression that RE2 refuses; a dynamic one fails closed at evaluation", () => {
    expect(issue('action.name.matches("(unclosed")').message).toMatch(
      /invalid regular expression: .* at line 1, column \d+$/,
    );
    expect(issue('action.name.matches("a(?=b)")').message).toMatch(/invalid regular expression/);
    const d = decide("action.name.matches(action.payload.pattern)", { payload: { pattern: "(" } });
    expect(d.policy_decision).toBe("require_approval");
    expect(decide('action.name.matches("^look")').policy_decision).toBe("deny");
  });

  it("the bounds: length, size, nested comprehensions", () => {
    const long = `action.name == "${"x".repeat(CEL_LIMITS.maxLength)}"`;
    expect(issue(long)).toEqual({
      path: "custom_rules.0.expression",
      message: expect.stringMatching(/2048/),
    });
    const compiled = compileExpression(long);
    expect(compiled.ok || compiled.error.message).toBe("expression is longer than 2048 characters");
    const wide = `size([${"1,".repeat(CEL_LIMITS.maxNodes)}1]) > 0`;
    expect(wide.length).toBeLessThan(CEL_LIMITS.maxLength);
    expect(issue(wide).message).toMatch(/more than 500 syntax nodes/);
    expect(compileExpression(`size([${"1,".repeat(100)}1]) > 0`).ok).toBe(true);
    expect(issue("chain.actions.exists(a, chain.actions.exists(b, a.name == b.name))").message).toMatch(
      /inside another one is not allowed at line 1, column \d+/,
    );
  });
  it("a valid expression compiles once (the same program for the same text)", () => {
    const a = compileExpression("chain.eventCount > 100");
    const b = compileExpression("chain.eventCount > 100");
    expect(a.ok && b.ok && a.program === b.program).toBe(true);
    expect(
      PolicyConfigPatchSchema.safeParse({ custom_rules: [rule("chain.eventCount > 100")] }).success,
    ).toBe(true);
  });
});

describe("CEL evaluation shortcuts keep the library's results", () => {
  const inputs = {
    action: {
      agent_name: "billing",
      action_type: "tool_call",
      action_name: "pay",
      payload: { invoice: { total: 1200, lines: [{ sku: "a" }] }, "a.b": 1 },
    },
    destinationDomains: ["api.example.com"],
    identity: null,
    chain: {
      event_count: 2,
      financial_exposure_usd: 10,
      started_at_ms: NOW - 5000,
      actions_so_far: [{ name: "read_customer", type: "tool_call", agent_name: "billing" }],
    },
    environment: "production",
    nowMs: NOW,
  };
  const expressions = [
    "action.payload.invoice.total > 1000.0",
    'action.payload["a.b"] == 1.0',
    "action.payload.missing > 1.0",
    "has(action.payload.invoice.lines) && size(action.payload.invoice.lines) == 1",
    'action.name.startsWith("pa") && action["agentName"] == "billing"',
    'chain.actions.exists(action, action.name == "read_customer")',
    'chain.actions.exists(a, a.agentName == action.agentName) && org.environment == "production"',
    "identity.serviceAccount == 'x'",
    "chain.ageSeconds == 5.0 && now > timestamp('2020-01-01T00:00:00Z')",
    "action.map(k, k) == ['agentName', 'type', 'name', 'payload', 'destinationDomains']",
  ];
  it.each(expressions)("%s: the same value or error as the library's own plan", (text) => {
    const compiled = compileExpression(text);
    if (!compiled.ok) throw new Error(compiled.error.message);
    const all = celBindings(inputs);
    const library = celRun(text, all as never);
    const expected = isCelError(library)
      ? { ok: false, error: library.message }
      : { ok: true, value: library };
    expect(evaluateExpression(compiled.program, all)).toEqual(expected);
    // Only the variables (and the payload) the expression reads, as the engine builds them.
    const { variables, readsPayload } = compiled.program;
    expect(
      evaluateExpression(compiled.program, celBindings(inputs, { variables, withPayload: readsPayload })),
    ).toEqual(expected);
  });

  it("records which variables and whether the payload are read", () => {
    const program = (text: string) => {
      const c = compileExpression(text);
      if (!c.ok) throw new Error(c.error.message);
      return c.program;
    };
    expect([...program('action.name == "x"').variables]).toEqual(["action"]);
    expect(program('action.name == "x"').readsPayload).toBe(false);
    expect(program("action.payload.x == 1.0").readsPayload).toBe(true);
    expect(program("size(action) == 5").readsPayload).toBe(true);
    expect(program('chain.actions.exists(action, action.name == "x")').readsPayload).toBe(false);
    expect([...program('chain.actions.exists(action, action.name == "x")').variables]).toEqual(["chain"]);
    expect(
      [...program("now > timestamp('2020-01-01T00:00:00Z') && org.environment == 'p'").variables].sort(),
    ).toEqual(["now", "org"]);
  });
});
