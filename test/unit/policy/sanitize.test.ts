import { describe, expect, it } from "vitest";
import {
  CIRCULAR,
  DEFAULT_API_KEY_PREFIX,
  DEFAULT_SENSITIVE_FIELD_PATTERNS,
  DEFAULT_SENSITIVE_VALUE_PREFIXES,
  MAX_PAYLOAD_DEPTH,
  REDACTED,
  redactText,
  SERVICE_SECRET_PREFIXES,
  sanitizePayload,
  TRUNCATED_DEPTH,
  TRUNCATED_SUFFIX,
} from "../../../src/policy/sanitize.js";

describe("spec defaults", () => {
  it("exports exactly the spec's lists", () => {
    expect(DEFAULT_SENSITIVE_FIELD_PATTERNS).toEqual([
      "api_key",
      "password",
      "secret",
      "_token",
      "credit_card",
      "ssn",
      "private_key",
    ]);
    expect(DEFAULT_SENSITIVE_VALUE_PREFIXES).toEqual(["sk_", "pk_", "ghp_", "hf_", "eyJ", "AKIA"]);
    expect(DEFAULT_API_KEY_PREFIX).toBe("tg_");
  });

  it.each([
    ["api_key", "api_key"],
    ["password", "password"],
    ["secret", "secret"],
    ["_token", "_token"],
    ["credit_card", "credit_card"],
    ["ssn", "ssn"],
    ["private_key", "private_key"],
    ["api_key", "OPENAI_API_KEY"],
    ["password", "db_Password"],
    ["secret", "clientSecret"],
    ["_token", "refresh_token"],
    ["credit_card", "Credit_Card_Number"],
    ["ssn", "user_SSN"],
    ["private_key", "rsa_private_key_pem"],
  ])("field pattern %s redacts key %s (case-insensitive substring)", (_pattern, key) => {
    const r = sanitizePayload({ [key]: "hunter2", keep: "ok" });
    expect(r.payload).toEqual({ [key]: REDACTED, keep: "ok" });
    expect(r.redacted).toBe(1);
  });

  it.each([
    ["sk_", "sk_live_abc"],
    ["pk_", "pk_test_abc"],
    ["ghp_", "ghp_0123456789"],
    ["hf_", "hf_abcdef"],
    ["eyJ", "eyJhbGciOiJIUzI1NiJ9.x.y"],
    ["AKIA", "AKIAIOSFODNN7EXAMPLE"],
    ["tg_", "tg_live_123"],
  ])("value prefix %s redacts %s", (_prefix, value) => {
    const r = sanitizePayload({ note: value, list: [value], deep: { x: value } });
    expect(r.payload).toEqual({ note: REDACTED, list: [REDACTED], deep: { x: REDACTED } });
    expect(r.redacted).toBe(3);
  });

  it.each([["SK_live"], ["a sk_live"], ["akia123"], ["Tg_x"], ["token"], ["eyj"]])(
    "value prefixes are case-sensitive startsWith: %s is kept",
    (value) => {
      expect(sanitizePayload({ v: value }).payload).toEqual({ v: value });
    },
  );

  it("keys that merely look similar are kept", () => {
    const payload = { token: "t", key: "k", username: "u", card: "c" };
    expect(sanitizePayload(payload).payload).toEqual(payload);
  });

  it("redacts a whole object under a sensitive key", () => {
    const r = sanitizePayload({ secrets: { a: 1, b: [2] } });
    expect(r.payload).toEqual({ secrets: REDACTED });
    expect(r.redacted).toBe(1);
  });

  it("redacts at every depth", () => {
    const r = sanitizePayload({ a: { b: [{ password: "x" }, { c: { api_key: "y" } }] } });
    expect(r.payload).toEqual({ a: { b: [{ password: REDACTED }, { c: { api_key: REDACTED } }] } });
    expect(r.redacted).toBe(2);
  });
});

describe("custom patterns are appended", () => {
  it("custom field patterns add to the defaults", () => {
    const r = sanitizePayload({ pin_code: "1234", password: "x", other: "y" }, { fieldPatterns: ["PIN"] });
    expect(r.payload).toEqual({ pin_code: REDACTED, password: REDACTED, other: "y" });
  });

  it("custom value prefixes add to the defaults", () => {
    const r = sanitizePayload({ a: "xoxb-123", b: "sk_1", c: "fine" }, { valuePrefixes: ["xoxb-"] });
    expect(r.payload).toEqual({ a: REDACTED, b: REDACTED, c: "fine" });
  });

  it("a custom api key prefix adds to the default value prefixes", () => {
    const r = sanitizePayload({ a: "acme_123", b: "sk_1" }, { apiKeyPrefix: "acme_" });
    expect(r.payload).toEqual({ a: REDACTED, b: REDACTED });
  });

  it("empty custom patterns are ignored instead of redacting everything", () => {
    const r = sanitizePayload({ a: "x" }, { fieldPatterns: [""], valuePrefixes: [""], apiKeyPrefix: "" });
    expect(r.payload).toEqual({ a: "x" });
  });
});

describe("truncation", () => {
  it("truncates strings longer than 1000 characters by default", () => {
    const r = sanitizePayload({ s: "a".repeat(1001), t: "b".repeat(1000) });
    expect(r.payload["s"]).toBe("a".repeat(1000) + TRUNCATED_SUFFIX);
    expect(r.payload["t"]).toBe("b".repeat(1000));
    expect(r.truncated).toBe(1);
  });

  it("honours maxStringLength, in arrays and nested objects too", () => {
    const r = sanitizePayload({ s: "abcdef", l: ["abcdef"], n: { x: "abcdef" } }, { maxStringLength: 3 });
    expect(r.payload).toEqual({
      s: `abc${TRUNCATED_SUFFIX}`,
      l: [`abc${TRUNCATED_SUFFIX}`],
      n: { x: `abc${TRUNCATED_SUFFIX}` },
    });
    expect(r.truncated).toBe(3);
  });

  it("checks value prefixes before truncating", () => {
    expect(sanitizePayload({ s: `sk_${"x".repeat(5000)}` }).payload).toEqual({ s: REDACTED });
  });

  it.each([[0], [-1], [1.5], [Number.NaN]])("rejects maxStringLength %s", (maxStringLength) => {
    expect(() => sanitizePayload({}, { maxStringLength })).toThrow(RangeError);
  });

  it(`cuts objects nested deeper than ${MAX_PAYLOAD_DEPTH} levels`, () => {
    const nest = (levels: number): Record<string, unknown> => {
      let value: Record<string, unknown> = { leaf: "x" };
      for (let i = 0; i < levels; i++) value = { n: value };
      return value;
    };
    const depthOf = (value: unknown): number => {
      let depth = 0;
      let cur = value;
      while (typeof cur === "object" && cur !== null) {
        cur = (cur as Record<string, unknown>)["n"];
        depth++;
      }
      return depth;
    };
    const ok = sanitizePayload(nest(MAX_PAYLOAD_DEPTH - 1));
    expect(ok.truncated).toBe(0);
    expect(JSON.stringify(ok.payload)).toContain('"leaf":"x"');
    const cut = sanitizePayload(nest(MAX_PAYLOAD_DEPTH + 5));
    expect(cut.truncated).toBe(1);
    expect(JSON.stringify(cut.payload)).toContain(TRUNCATED_DEPTH);
    expect(depthOf(cut.payload)).toBe(MAX_PAYLOAD_DEPTH + 1);
  });
});

describe("safety", () => {
  it("survives cycles", () => {
    const a: Record<string, unknown> = { name: "a" };
    a["self"] = a;
    a["list"] = [a];
    const r = sanitizePayload(a);
    expect(r.payload).toEqual({ name: "a", self: CIRCULAR, list: [CIRCULAR] });
    expect(() => JSON.stringify(r.payload)).not.toThrow();
  });

  it("copies shared (non-cyclic) references", () => {
    const shared = { x: 1 };
    expect(sanitizePayload({ a: shared, b: shared }).payload).toEqual({ a: { x: 1 }, b: { x: 1 } });
  });

  it("never mutates its input", () => {
    const input = { password: "p", nested: { s: "sk_x", long: "z".repeat(2000) }, list: ["ghp_1"] };
    const copy = structuredClone(input);
    sanitizePayload(input, { maxStringLength: 5 });
    expect(input).toEqual(copy);
  });

  it("keeps a __proto__ key as a plain key", () => {
    const r = sanitizePayload(JSON.parse('{"__proto__": {"polluted": true}, "a": 1}'));
    expect(Object.getPrototypeOf(r.payload)).toBe(Object.prototype);
    expect(Object.hasOwn(r.payload, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined();
  });

  it("converts non-JSON values", () => {
    const r = sanitizePayload({
      d: new Date(0),
      bad: new Date(Number.NaN),
      big: 10n,
      f: () => 1,
      u: undefined,
      arr: [undefined, () => 1, 1],
      n: null,
      b: false,
    });
    expect(r.payload).toEqual({
      d: "1970-01-01T00:00:00.000Z",
      bad: null,
      big: "10",
      arr: [null, null, 1],
      n: null,
      b: false,
    });
  });
});

describe("token counts", () => {
  it("keeps numeric LLM token counts but redacts strings under those keys", async () => {
    const { sanitizePayload } = await import("../../../src/policy/sanitize.js");
    const out = sanitizePayload({
      input_tokens: 10,
      usage: { completion_tokens: 5 },
      refresh_token: "abc",
      prompt_tokens: "x",
    });
    expect(out.payload).toEqual({
      input_tokens: 10,
      usage: { completion_tokens: 5 },
      refresh_token: "[REDACTED]",
      prompt_tokens: "[REDACTED]",
    });
  });
});

describe("every prefix the service issues is redacted by default", () => {
  it.each(SERVICE_SECRET_PREFIXES)("%s…", (prefix) => {
    expect(sanitizePayload({ v: `${prefix}abcdef` }).payload.v).toBe(REDACTED);
    expect(redactText(`the key is ${prefix}abcdef, keep it`)).toBe(`the key is ${REDACTED}, keep it`);
  });
});

describe("redactText: the payload rules inside free text", () => {
  it.each([
    ["use sk_live_abc to pay", `use ${REDACTED} to pay`],
    ["password=hunter2 and more", `password=${REDACTED} and more`],
    ['{"api_key": "abc 123"}', `{"api_key": "${REDACTED}"}`],
    ["my_secret: 'x y' ok", `my_secret: '${REDACTED}' ok`],
    ["Authorization: Bearer eyJhbGciOi.x.y", `Authorization: Bearer ${REDACTED}`],
    ["AKIAIOSFODNN7EXAMPLE leaked", `${REDACTED} leaked`],
    ["(ghp_abc)", `(${REDACTED})`],
  ])("%j → %j", (text, expected) => {
    expect(redactText(text)).toBe(expected);
  });

  it.each([
    "input_tokens: 120 used",
    "see https://example.com/a?x=1",
    "approved after a call with finance",
    "",
  ])("leaves %j alone", (text) => {
    expect(redactText(text)).toBe(text);
  });

  it("custom patterns are appended", () => {
    expect(
      redactText("internal id=abc, ticket: INC-42", { fieldPatterns: ["ticket"], valuePrefixes: ["abc"] }),
    ).toBe(`internal id=${REDACTED}, ticket: ${REDACTED}`);
  });
});
