/** init / createConfig: defaults, validation, fail modes, deprecations, secrecy of the key. */
import { inspect } from "node:util";
import { afterEach, describe, expect, it, vi } from "vitest";
import { resetConfig } from "../../../src/sdk/config.js";
import * as publicSdk from "../../../src/sdk/index.js";
import {
  ChainConfig,
  createConfig,
  DEFAULT_FAIL_MODES,
  getConfig,
  init,
  sanitizeForConfig,
} from "../../../src/sdk/index.js";

const KEY = "tg_unit_secret_key_0123456789";

afterEach(() => {
  resetConfig();
  vi.restoreAllMocks();
});

describe("init defaults (spec: init table)", () => {
  it("has every parameter with its default", () => {
    const c = createConfig(KEY);
    expect(c).toBeInstanceOf(ChainConfig);
    expect({
      environment: c.environment,
      backendUrl: c.backendUrl,
      backendTimeoutSeconds: c.backendTimeoutSeconds,
      failModes: c.failModes,
      failMode: c.failMode,
      financialApprovalThresholdUsd: c.financialApprovalThresholdUsd,
      cumulativeFinancialThresholdUsd: c.cumulativeFinancialThresholdUsd,
      externalDomainsAllowlist: c.externalDomainsAllowlist,
      highRiskAgents: c.highRiskAgents,
      defaultApprovalTimeoutHours: c.defaultApprovalTimeoutHours,
      fallbackApprovers: c.fallbackApprovers,
      sensitiveFieldPatterns: c.sensitiveFieldPatterns,
      sensitiveValuePatterns: c.sensitiveValuePatterns,
      maxPayloadStringLength: c.maxPayloadStringLength,
      enableLocalFastPath: c.enableLocalFastPath,
      offlineBufferMaxEvents: c.offlineBufferMaxEvents,
    }).toEqual({
      environment: "production",
      backendUrl: "http://localhost:8000",
      backendTimeoutSeconds: 5.0,
      failModes: null,
      failMode: null,
      financialApprovalThresholdUsd: 5000,
      cumulativeFinancialThresholdUsd: 10000,
      externalDomainsAllowlist: null,
      highRiskAgents: null,
      defaultApprovalTimeoutHours: 24,
      fallbackApprovers: null,
      sensitiveFieldPatterns: null,
      sensitiveValuePatterns: null,
      maxPayloadStringLength: 1000,
      enableLocalFastPath: true,
      offlineBufferMaxEvents: 100,
    });
    expect(c.backendTimeoutMs).toBe(5000);
    expect(c.internals.pollIntervalMs).toBe(5000);
    expect(c.policySettings).toEqual({});
  });

  it("init stores the configuration process-wide; createConfig does not", () => {
    expect(() => getConfig()).toThrow(/init/);
    const a = createConfig(KEY, { environment: "staging" });
    expect(() => getConfig()).toThrow(/init/);
    const b = init(KEY, { environment: "development" });
    expect(getConfig()).toBe(b);
    expect(a.environment).toBe("staging");
  });

  it("sends only explicitly given policy settings", () => {
    const c = createConfig(KEY, {
      financialApprovalThresholdUsd: 100,
      externalDomainsAllowlist: ["partner.example"],
      highRiskAgents: ["rogue"],
    });
    expect(c.policySettings).toEqual({
      financial_approval_threshold_usd: 100,
      external_domains_allowlist: ["partner.example"],
      high_risk_agents: ["rogue"],
    });
  });

  it("strips a trailing slash of backendUrl", () => {
    expect(createConfig(KEY, { backendUrl: "https://tollgate.example.com/" }).backendUrl).toBe(
      "https://tollgate.example.com",
    );
  });
});

describe("validation", () => {
  it.each([
    [{ backendTimeoutSeconds: 0 }, /backendTimeoutSeconds/],
    [{ backendUrl: "ftp://x" }, /backendUrl/],
    [{ backendUrl: "not a url" }, /backendUrl/],
    [{ maxPayloadStringLength: 1.5 }, /maxPayloadStringLength/],
    [{ defaultApprovalTimeoutHours: -1 }, /defaultApprovalTimeoutHours/],
    [{ fallbackApprovers: ["nope"] }, /fallbackApprovers\.0/],
    [{ failModes: { financial: "maybe" } }, /failModes\.financial/],
    [{ failModes: { teleport: "deny" } }, /failModes/],
    [{ failMode: "open" }, /failMode/],
    [{ sensitiveFieldPatterns: [""] }, /sensitiveFieldPatterns\.0/],
    [{ unknownOption: 1 }, /unknownOption|Unrecognized/],
  ])("rejects %j naming the field", (options, field) => {
    expect(() => createConfig(KEY, options as never)).toThrow(TypeError);
    expect(() => createConfig(KEY, options as never)).toThrow(field);
  });

  it("rejects an empty API key", () => {
    expect(() => createConfig("")).toThrow(/apiKey/);
  });

  it("rejects failMode together with failModes", () => {
    expect(() => createConfig(KEY, { failMode: "deny", failModes: { default: "allow" } })).toThrow(
      /failMode.*failModes|failModes.*failMode/,
    );
  });

  it("never puts the API key into validation errors", () => {
    let thrown: unknown = null;
    try {
      createConfig(KEY, { backendTimeoutSeconds: -1 });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    expect(String(thrown)).toMatch(/backendTimeoutSeconds/);
    expect(String(thrown)).not.toContain(KEY);
  });
});

describe("fail modes", () => {
  it("service defaults: deny for financial, external, bulk and irreversible; allow otherwise", () => {
    const c = createConfig(KEY);
    expect(c.failModeFor("financial")).toEqual({ mode: "deny", key: "financial" });
    expect(c.failModeFor("external_communication")).toEqual({ mode: "deny", key: "external_communication" });
    expect(c.failModeFor("bulk_deletion").mode).toBe("deny");
    expect(c.failModeFor("irreversible").mode).toBe("deny");
    expect(c.failModeFor("llm_call").mode).toBe("allow");
    expect(c.failModeFor("default")).toEqual({ mode: "allow", key: "default" });
    expect(DEFAULT_FAIL_MODES.default).toBe("allow");
  });

  it("legacy failMode is fail_modes with only default", () => {
    const c = createConfig(KEY, { failMode: "allow" });
    expect(c.failModeFor("financial")).toEqual({ mode: "allow", key: "default" });
    expect(createConfig(KEY, { failMode: "deny" }).failModeFor("llm_call")).toEqual({
      mode: "deny",
      key: "default",
    });
  });

  it("given failModes win per category, then their default, then the service defaults", () => {
    const c = createConfig(KEY, { failModes: { financial: "allow" } });
    expect(c.failModeFor("financial")).toEqual({ mode: "allow", key: "financial" });
    expect(c.failModeFor("external_communication")).toEqual({ mode: "deny", key: "external_communication" });
    const d = createConfig(KEY, { failModes: { default: "deny", llm_call: "allow" } });
    expect(d.failModeFor("default")).toEqual({ mode: "deny", key: "default" });
    expect(d.failModeFor("bulk_operation")).toEqual({ mode: "deny", key: "default" });
    expect(d.failModeFor("llm_call")).toEqual({ mode: "allow", key: "llm_call" });
  });
});

describe("deprecated options", () => {
  it.each([
    [{ enableLocalFastPath: true }, "TG_DEP_ENABLE_LOCAL_FAST_PATH"],
    [{ enableLocalFastPath: false }, "TG_DEP_ENABLE_LOCAL_FAST_PATH"],
    [{ offlineBufferMaxEvents: 500 }, "TG_DEP_OFFLINE_BUFFER_MAX_EVENTS"],
  ])("%j emits a DeprecationWarning and has no effect", (options, code) => {
    const spy = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    const c = createConfig(KEY, options);
    expect(spy).toHaveBeenCalledTimes(1);
    expect(spy.mock.calls[0]?.[1]).toMatchObject({ type: "DeprecationWarning", code });
    expect(c.internals.pollIntervalMs).toBe(5000);
  });

  it("emits nothing when the deprecated options are not given", () => {
    const spy = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
    createConfig(KEY, { environment: "staging" });
    expect(spy).not.toHaveBeenCalled();
  });

  it("reaches process 'warning' listeners as a real DeprecationWarning", async () => {
    const seen = new Promise<Error>((resolve) => process.once("warning", resolve));
    createConfig(KEY, { offlineBufferMaxEvents: 1 });
    const warning = await seen;
    expect(warning.name).toBe("DeprecationWarning");
    expect(warning.message).toMatch(/offlineBufferMaxEvents/);
  });
});

describe("the API key stays secret", () => {
  it("is readable but not enumerable, serialized or inspected", () => {
    const c = createConfig(KEY);
    expect(c.apiKey).toBe(KEY);
    expect(Object.keys(c)).not.toContain("apiKey");
    expect(JSON.stringify(c)).not.toContain(KEY);
    expect(inspect(c)).not.toContain(KEY);
    expect(JSON.stringify(c)).toContain("[REDACTED]");
  });
});

describe("sanitizeForConfig", () => {
  it("appends custom patterns to the defaults and truncates", () => {
    const c = createConfig(KEY, {
      sensitiveFieldPatterns: ["note"],
      sensitiveValuePatterns: ["corp-"],
      maxPayloadStringLength: 3,
    });
    expect(sanitizeForConfig({ note: "a", password: "b", v: "corp-1", w: "sk_1", s: "abcdef" }, c)).toEqual({
      note: "[REDACTED]",
      password: "[REDACTED]",
      v: "[REDACTED]",
      w: "[REDACTED]",
      s: "abc…[truncated]",
    });
    expect(sanitizeForConfig(null, c)).toEqual({});
  });
});

describe("public surface", () => {
  it("does not export the test-only resetConfig", () => {
    expect(publicSdk).not.toHaveProperty("resetConfig");
  });
});
