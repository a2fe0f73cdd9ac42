import { describe, expect, it } from "vitest";
import {
  detectPii,
  domainFromText,
  domainMatches,
  estimateLlmCost,
  extractFacts,
  luhnValid,
  toFiniteNumber,
} from "../../../src/policy/facts.js";
import type { PolicyConfigPatch } from "../../../src/policy/schema.js";
import { action, config } from "./helpers.js";

const facts = (
  payload: Record<string, unknown>,
  over: Parameters<typeof action>[0] = {},
  patch: PolicyConfigPatch = {},
) => extractFacts(action({ ...over, payload }), config(patch));

describe("toFiniteNumber", () => {
  it.each([
    [12, 12],
    [-3.5, -3.5],
    ["12", 12],
    [" 1.5e3 ", 1500],
    ["$1,200.50", 1200.5],
    ["1,000,000", 1_000_000],
    [Number.NaN, null],
    [Number.POSITIVE_INFINITY, null],
    ["abc", null],
    ["", null],
    ["1,00", null],
    [true, null],
    [null, null],
    [{}, null],
  ])("%o → %o", (value, expected) => {
    expect(toFiniteNumber(value)).toBe(expected);
  });
});

describe("amount_usd", () => {
  it.each([
    [{ amount_usd: 10 }, 10],
    [{ amount: "20" }, 20],
    [{ value: 30 }, 30],
    [{ amount_usd: 1, amount: 2, value: 3 }, 1],
    [{ amount_usd: "n/a", amount: 2 }, 2],
    [{ amount_usd: null, value: "7.5" }, 7.5],
    [{ payment: { amount: 9999 } }, null],
    [{ amounts: [9999] }, null],
    [{}, null],
  ])("%o → %o", (payload, expected) => {
    expect(facts(payload).amount_usd).toBe(expected);
  });

  it("nested keys never count", () => {
    const f = facts({ details: { amount_usd: 1_000_000 }, data: [{ value: 5 }] });
    expect(f.amount_usd).toBeNull();
    expect(f.is_financial).toBe(false);
  });

  it("inherited properties are not payload keys", () => {
    const f = facts(JSON.parse('{"__proto__": {"amount": 99999}}'));
    expect(f.amount_usd).toBeNull();
  });

  it("action_type financial is financial without an amount", () => {
    expect(facts({}, { action_type: "financial" }).is_financial).toBe(true);
    expect(facts({ amount: 1 }).is_financial).toBe(true);
    expect(facts({}).is_financial).toBe(false);
  });
});

describe("domainFromText", () => {
  it.each([
    ["Example.COM", "example.com"],
    ["https://API.evil.com:8443/upload?x=1", "api.evil.com"],
    ["evil.com/path", "evil.com"],
    ["evil.com:443", "evil.com"],
    ["bob@Partner.io", "partner.io"],
    ["Bob <bob@partner.io>", "partner.io"],
    ["example.com.", "example.com"],
    ["not a domain", "not"],
    ["", null],
    ["https://", null],
    ["@@", null],
    ["a_b.com", null],
  ])("%o → %o", (text, expected) => {
    expect(domainFromText(text)).toBe(expected);
  });
});

describe("domainMatches", () => {
  it.each([
    ["example.com", "example.com", true],
    ["a.example.com", "example.com", true],
    ["a.b.example.com", "example.com", true],
    ["badexample.com", "example.com", false],
    ["a.example.com", "*.example.com", true],
    ["example.com", "*.example.com", false],
    ["EXAMPLE.com", "example.COM", true],
    ["example.org", "example.com", false],
  ])("%s vs %s → %s", (domain, pattern, expected) => {
    expect(domainMatches(domain, pattern)).toBe(expected);
  });
});

describe("destination domains", () => {
  it.each([
    [{ domain: "evil.com" }, "evil.com"],
    [{ destination_domain: "Evil.com" }, "evil.com"],
    [{ url: "https://hooks.evil.com/x" }, "hooks.evil.com"],
    [{ endpoint: "https://api.evil.com" }, "api.evil.com"],
    [{ webhook_url: "https://wh.evil.com" }, "wh.evil.com"],
    [{ to: "a@evil.com" }, "evil.com"],
    [{ to: ["a@evil.com", "b@other.com"] }, "evil.com"],
    [{ email: "a@evil.com" }, "evil.com"],
    [{ recipient: "a@evil.com" }, "evil.com"],
    [{ recipients: ["a@evil.com", "b@other.com"] }, "evil.com"],
    [{ cc: "a@evil.com" }, "evil.com"],
    [{ bcc: ["a@evil.com"] }, "evil.com"],
    [{ message: { to: "a@evil.com" } }, null],
    [{ to: 42 }, null],
    [{}, null],
  ])("%o → %o", (payload, expected) => {
    expect(facts(payload).destination_domain).toBe(expected);
  });

  it("collects every domain, deduplicated, in key order", () => {
    const f = facts({ recipients: ["a@x.com", "b@y.com", "c@x.com"], url: "https://z.com" });
    expect(f.domains).toEqual(["z.com", "x.com", "y.com"]);
  });

  it("internal domains (exact, subdomain, glob) are not external", () => {
    const patch = { internal_domains: ["corp.com", "*.internal.net"] };
    expect(facts({ to: "a@corp.com" }, {}, patch).is_external).toBe(false);
    expect(facts({ to: "a@mail.corp.com" }, {}, patch).is_external).toBe(false);
    expect(facts({ url: "https://svc.internal.net" }, {}, patch).is_external).toBe(false);
    expect(facts({ url: "https://internal.net" }, {}, patch).is_external).toBe(true);
    expect(facts({ to: "a@evil.com" }, {}, patch).is_external).toBe(true);
  });

  it("one external recipient among internal ones makes the action external, and is the destination", () => {
    const f = facts({ recipients: ["a@corp.com", "b@evil.com"] }, {}, { internal_domains: ["corp.com"] });
    expect(f.is_external).toBe(true);
    expect(f.destination_domain).toBe("evil.com");
    expect(f.external_domains).toEqual(["evil.com"]);
  });

  it("an internal-only action keeps its first domain as destination", () => {
    const f = facts({ to: "a@corp.com" }, {}, { internal_domains: ["corp.com"] });
    expect(f.destination_domain).toBe("corp.com");
    expect(f.external_domains).toEqual([]);
  });

  it("allowlisted only when every external domain is on the allowlist", () => {
    const patch = { external_domains_allowlist: ["partner.io", "*.stripe.com"] };
    expect(facts({ to: "a@partner.io" }, {}, patch).allowlisted).toBe(true);
    expect(facts({ url: "https://api.stripe.com" }, {}, patch).allowlisted).toBe(true);
    expect(facts({ recipients: ["a@partner.io", "b@evil.com"] }, {}, patch).allowlisted).toBe(false);
    expect(facts({}, {}, patch).allowlisted).toBe(false);
  });
});

describe("record_count", () => {
  it.each([
    [{ record_count: 5 }, 5],
    [{ records_count: 6 }, 6],
    [{ count: "7" }, 7],
    [{ records: [1, 2, 3] }, 3],
    [{ ids: ["a", "b"] }, 2],
    [{ items: [] }, 0],
    [{ record_count: 1, records: [1, 2] }, 1],
    [{ count: -1 }, null],
    [{ records: "x" }, null],
    [{ batch: { records: [1, 2, 3] } }, null],
    [{}, null],
  ])("%o → %o", (payload, expected) => {
    expect(facts(payload).record_count).toBe(expected);
  });
});

describe("is_deletion", () => {
  it.each([
    ["delete_users", {}, true],
    ["users.delete", {}, true],
    ["bulk-remove", {}, true],
    ["purge_cache", {}, true],
    ["DropTable", {}, true],
    ["destroy", {}, true],
    ["erase_records", {}, true],
    ["undelete", {}, false],
    ["list_users", {}, false],
    ["update", { operation: "DELETE" }, true],
    ["update", { op: "purge" }, true],
    ["update", { op: "remove" }, true],
    ["update", { op: "insert" }, false],
    ["update", { nested: { op: "delete" } }, false],
  ])("%s %o → %s", (action_name, payload, expected) => {
    expect(facts(payload, { action_name }).is_deletion).toBe(expected);
  });
});

describe("is_irreversible", () => {
  it.each([
    ["sign_contract", {}, true],
    ["Publish_Post", {}, true],
    ["legal_filing", {}, true],
    ["lookup", { irreversible: true }, true],
    ["lookup", { irreversible: "true" }, false],
    ["lookup", { tags: ["finance", "irreversible"] }, true],
    ["lookup", { meta: { irreversible: true } }, false],
    ["lookup", {}, false],
  ])("%s %o → %s", (action_name, payload, expected) => {
    expect(facts(payload, { action_name }).is_irreversible).toBe(expected);
  });

  it("uses the configured irreversible_actions", () => {
    expect(facts({}, { action_name: "wire" }, { irreversible_actions: ["WIRE"] }).is_irreversible).toBe(true);
    expect(
      facts({}, { action_name: "sign_contract" }, { irreversible_actions: ["wire"] }).is_irreversible,
    ).toBe(false);
  });
});

describe("tokens and estimated cost", () => {
  const llm = { action_type: "llm_call", action_name: "chat" };
  it.each([
    [{ input_tokens: 1000, output_tokens: 2000 }, 1000, 2000],
    [{ prompt_tokens: 10, completion_tokens: 20 }, 10, 20],
    [{ usage: { input_tokens: 3, output_tokens: 4 } }, 3, 4],
    [{ usage: { prompt_tokens: 5, completion_tokens: 6 } }, 5, 6],
    [{ input_tokens: 1, usage: { input_tokens: 99 } }, 1, 0],
    [{ input_tokens: "12" }, 12, 0],
    [{ input_tokens: -5 }, 0, 0],
    [{ meta: { input_tokens: 1000 } }, 0, 0],
  ])("%o → in %d out %d", (payload, input, output) => {
    const f = facts(payload, llm);
    expect([f.input_tokens, f.output_tokens, f.tokens]).toEqual([input, output, input + output]);
  });

  it("uses default_llm_price for a missing or unknown model", () => {
    expect(facts({ input_tokens: 1000, output_tokens: 1000 }, llm).estimated_cost_usd).toBeCloseTo(0.018);
    expect(facts({ model: "mystery", input_tokens: 2000 }, llm).estimated_cost_usd).toBeCloseTo(0.006);
  });

  it("uses llm_pricing[model]", () => {
    const patch = { llm_pricing: { "gpt-x": { input_per_1k_usd: 0.01, output_per_1k_usd: 0.03 } } };
    const f = facts({ model: "gpt-x", input_tokens: 1500, output_tokens: 500 }, llm, patch);
    expect(f.model).toBe("gpt-x");
    expect(f.estimated_cost_usd).toBeCloseTo(0.015 + 0.015);
  });

  it("a model named like an Object.prototype key gets the default price", () => {
    expect(facts({ model: "constructor", input_tokens: 1000 }, llm).estimated_cost_usd).toBeCloseTo(0.003);
    expect(facts({ model: "__proto__", output_tokens: 1000 }, llm).estimated_cost_usd).toBeCloseTo(0.015);
  });

  it("non-llm_call actions have no tokens and no cost", () => {
    const f = facts({ input_tokens: 1000, output_tokens: 1000 });
    expect([f.tokens, f.estimated_cost_usd]).toEqual([0, null]);
  });

  it("estimateLlmCost is linear in tokens", () => {
    const c = config();
    expect(estimateLlmCost(c, null, 0, 0)).toBe(0);
    expect(estimateLlmCost(c, null, 1000, 0)).toBeCloseTo(0.003);
    expect(estimateLlmCost(c, null, 0, 1000)).toBeCloseTo(0.015);
  });
});

describe("PII detection", () => {
  it.each([
    ["contact me at jane.doe@example.com", ["email"]],
    ["ssn 123-45-6789", ["ssn"]],
    ["card 4111 1111 1111 1111", ["credit_card"]],
    ["card 4111-1111-1111-1111", ["credit_card"]],
    ["card 4111111111111111", ["credit_card"]],
    ["card 4111111111111112", []],
    ["order 1234567890123", []],
    ["call +1 415 555 0100", ["phone"]],
    ["call +14155550100", ["phone"]],
    ["call +1 (415) 555-0100", ["phone"]],
    ["call 415 555 0100", []],
    ["version 1.2.3 at 12:00", []],
    ["a@b", []],
  ])("%s → %o", (text, kinds) => {
    expect(detectPii([text])).toEqual(kinds);
  });

  it("luhn", () => {
    expect(luhnValid("4111111111111111")).toBe(true);
    expect(luhnValid("79927398713")).toBe(true);
    expect(luhnValid("79927398710")).toBe(false);
  });

  it("scans top-level strings and strings in top-level arrays, never nested objects", () => {
    expect(facts({ body: "ssn 123-45-6789" }).pii_kinds).toEqual(["ssn"]);
    expect(facts({ lines: ["x", "ssn 123-45-6789"] }).pii_kinds).toEqual(["ssn"]);
    expect(facts({ body: { text: "ssn 123-45-6789" } }).pii_detected).toBe(false);
    expect(facts({ lines: [{ text: "ssn 123-45-6789" }] }).pii_detected).toBe(false);
  });

  it("does not count the destination addresses as PII", () => {
    const f = facts({ to: "bob@evil.com", recipients: ["a@evil.com"], subject: "hi" });
    expect(f.pii_detected).toBe(false);
  });

  it("reports every kind found, in a fixed order, never values", () => {
    const f = facts({ a: "+14155550100", b: "x@y.com", c: "123-45-6789" });
    expect(f.pii_kinds).toEqual(["email", "ssn", "phone"]);
    expect(JSON.stringify(f)).not.toContain("123-45-6789");
  });

  // Its speed on this input is a benchmark (bench/pii-scan), not a timed assertion.
  it("finds nothing in adversarial input, and still finds PII beside it", () => {
    const adversarial = [
      "a@".repeat(50_000),
      "1 ".repeat(50_000),
      "+".repeat(50_000),
      `${"a.".repeat(50_000)}@`,
    ];
    expect(detectPii(adversarial)).toEqual([]);
    expect(detectPii([...adversarial, "write to x@y.com", "call +1 415 555 0100"])).toEqual([
      "email",
      "phone",
    ]);
  });
});

describe("category", () => {
  it.each([
    [
      "financial beats everything",
      { amount: 10, to: "a@evil.com", records: Array(500) },
      "delete_all",
      "tool_call",
      "financial",
    ],
    ["bulk deletion", { record_count: 10 }, "delete_rows", "tool_call", "bulk_deletion"],
    ["small deletion is default", { record_count: 9 }, "delete_rows", "tool_call", "default"],
    ["irreversible", { to: "a@evil.com" }, "sign_contract", "tool_call", "irreversible"],
    ["external", { to: "a@evil.com", record_count: 500 }, "send", "tool_call", "external_communication"],
    ["bulk operation", { record_count: 100 }, "update", "tool_call", "bulk_operation"],
    ["llm call", { input_tokens: 5 }, "chat", "llm_call", "llm_call"],
    ["default", {}, "lookup", "tool_call", "default"],
  ])("%s", (_name, payload, action_name, action_type, expected) => {
    expect(facts(payload, { action_name, action_type }).category).toBe(expected);
  });

  it("follows the configured thresholds", () => {
    expect(
      facts({ record_count: 3 }, { action_name: "delete" }, { bulk_deletion_threshold: 3 }).category,
    ).toBe("bulk_deletion");
    expect(facts({ record_count: 3 }, {}, { bulk_operation_threshold: 3 }).category).toBe("bulk_operation");
  });
});

describe("robustness", () => {
  it.each([
    [{ amount: { valueOf: 5 } }],
    [{ to: [null, 1, {}, "x@@"] }],
    [{ url: "http://[::1" }],
    [{ usage: "lots" }],
    [{ tags: "irreversible" }],
  ])("never throws: %o", (payload) => {
    expect(() => facts(payload, { action_type: "llm_call" })).not.toThrow();
  });

  it("treats a non-object payload as empty", () => {
    const a = { ...action(), payload: "nope" as unknown as Record<string, unknown> };
    expect(extractFacts(a, config()).category).toBe("default");
  });
});
