/**
 * Sanitization before anything leaves the process (spec: "Limits" → payload sanitization
 * defaults): every default field-name substring and value prefix, the API key prefix, custom
 * patterns appended, truncation at maxPayloadStringLength. Asserted on the bytes that crossed a
 * real TCP proxy, and on what the service stored (GET /v1/chains/{id}).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Chain } from "../../src/sdk/index.js";
import { type SdkEnv, startSdkEnv } from "./support/env.js";
import { startProxy, type TcpProxy } from "./support/proxy.js";

let env: SdkEnv;
let proxy: TcpProxy;
beforeAll(async () => {
  env = await startSdkEnv("sdk-sanitize");
  proxy = await startProxy(env.t.url);
});
afterAll(async () => {
  await proxy?.close();
  await env?.close();
});

/** Secret values that must never cross the wire (each unique so it can be searched for). */
const SECRETS = {
  apiKeyField: "plain-value-under-api_key-1",
  passwordField: "hunter2-under-password-2",
  secretField: "plain-value-under-client_secret-3",
  tokenField: "plain-value-under-github_token-4",
  creditCardField: "4111111111111111",
  ssnField: "123-45-6789",
  privateKeyField: "-----BEGIN PRIVATE KEY----- abc",
  nestedPassword: "nested-password-value-5",
  upperCaseField: "value-under-API_KEY-6",
  skPrefix: "sk_live_51Habcdef0123456789",
  pkPrefix: "pk_test_0123456789abcdef",
  ghpPrefix: "ghp_0123456789abcdefABCDEF0123456789abcd",
  hfPrefix: "hf_abcdefghijklmnopqrstuvwxyz012345",
  jwtPrefix: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
  awsPrefix: "AKIAIOSFODNN7EXAMPLE",
  tollgatePrefix: "tg_0123456789abcdefghij",
  customField: "value-under-internal_note-7",
  customPrefix: "corp-secret-0123456789",
  inArray: "sk_in_array_0123456789",
} as const;

describe("payload sanitization", () => {
  it("redacts every default pattern, the API key prefix and custom patterns before sending", async () => {
    const config = env.config({
      backendUrl: proxy.url,
      sensitiveFieldPatterns: ["internal_note"],
      sensitiveValuePatterns: ["corp-"],
      maxPayloadStringLength: 50,
    });
    const chain = await new Chain("sanitize", { config }).enter();
    const long = "x".repeat(80);
    const payload = {
      api_key: SECRETS.apiKeyField,
      password: SECRETS.passwordField,
      client_secret: SECRETS.secretField,
      github_token: SECRETS.tokenField,
      credit_card: SECRETS.creditCardField,
      customer_ssn: SECRETS.ssnField,
      private_key: SECRETS.privateKeyField,
      API_KEY_HEADER: SECRETS.upperCaseField,
      nested: { deeper: { password: SECRETS.nestedPassword, keep: "visible" } },
      stripe: SECRETS.skPrefix,
      publishable: SECRETS.pkPrefix,
      github: SECRETS.ghpPrefix,
      huggingface: SECRETS.hfPrefix,
      jwt: SECRETS.jwtPrefix,
      aws: SECRETS.awsPrefix,
      tollgate: SECRETS.tollgatePrefix,
      internal_note: SECRETS.customField,
      corp: SECRETS.customPrefix,
      list: ["fine", SECRETS.inArray],
      long,
      amount_usd: 12,
      input_tokens: 100,
      path: "/reports/q3.pdf",
    };
    const d = await chain.recordAgentAction({
      agentName: "reader",
      actionType: "tool_call",
      actionName: "read_file",
      payload,
    });
    expect(d.policy_decision).toBe("allow");

    const R = "[REDACTED]";
    const expected = {
      api_key: R,
      password: R,
      client_secret: R,
      github_token: R,
      credit_card: R,
      customer_ssn: R,
      private_key: R,
      API_KEY_HEADER: R,
      nested: { deeper: { password: R, keep: "visible" } },
      stripe: R,
      publishable: R,
      github: R,
      huggingface: R,
      jwt: R,
      aws: R,
      tollgate: R,
      internal_note: R,
      corp: R,
      list: ["fine", R],
      long: `${"x".repeat(50)}…[truncated]`,
      amount_usd: 12,
      input_tokens: 100,
      path: "/reports/q3.pdf",
    };
    // What crossed the wire.
    const sent = proxy.requestBodies(/^POST \/v1\/chains\/[^/]+\/actions/);
    expect(sent).toHaveLength(1);
    expect((sent[0] as { payload: unknown }).payload).toEqual(expected);
    const wire = Buffer.from(proxy.received(), "latin1").toString("utf8");
    for (const [name, secret] of Object.entries(SECRETS)) {
      expect(wire.includes(secret), `${name} crossed the wire`).toBe(false);
    }
    expect(wire.includes(long)).toBe(false);
    // What the service stored.
    const stored = await env.stored(chain.chainId!);
    expect(stored.events[0]?.payload).toEqual(expected);
    // The caller's object is untouched.
    expect(payload.password).toBe(SECRETS.passwordField);
    await chain.exit();
  });

  it("truncates at the default 1000 characters", async () => {
    const chain = await new Chain("sanitize-default-length", {
      config: env.config({ backendUrl: proxy.url }),
    }).enter();
    await chain.recordAgentAction({
      agentName: "reader",
      actionType: "tool_call",
      actionName: "read_file",
      payload: {
        body: "y".repeat(1001),
        ok: "y".repeat(1000),
      },
    });
    const stored = await env.stored(chain.chainId!);
    expect(stored.events[0]?.payload).toEqual({
      body: `${"y".repeat(1000)}…[truncated]`,
      ok: "y".repeat(1000),
    });
    await chain.exit();
  });
});

describe("metadata and failure messages leave the process sanitized too", () => {
  it("secrets in chain metadata and in the failure message never cross the wire", async () => {
    const chain = new Chain("meta-secrets", {
      metadata: {
        owner: "team-a",
        db_password: "meta-hunter2-7",
        note: "sk_live_meta_8",
        long: "x".repeat(5000),
      },
      config: env.config({ backendUrl: proxy.url }),
    });
    await chain.enter();
    await chain.exit(new Error("crashed holding ghp_failure_secret_9 and password=meta-pw-10"));
    const bodies = JSON.stringify(proxy.requestBodies(/POST \/v1\/chains(\/[^/]+\/complete)? /));
    for (const s of ["meta-hunter2-7", "sk_live_meta_8", "ghp_failure_secret_9", "meta-pw-10"])
      expect(bodies).not.toContain(s);
    const stored = await env.stored(chain.chainId!);
    expect(stored.metadata).toMatchObject({ owner: "team-a", db_password: "[REDACTED]", note: "[REDACTED]" });
    expect((stored.metadata.long as string).length).toBe(5000);
    expect(stored.failure?.message).toBe("crashed holding [REDACTED] and password=[REDACTED]");
  });
});
