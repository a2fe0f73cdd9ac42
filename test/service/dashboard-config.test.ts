/**
 * Configuration of approval mail (SMTP_*) and dashboard sign-in (OIDC_*, TOLLGATE_DEV_OIDC*):
 * validated once at start-up, errors name the variable, secrets come from env or files and
 * never appear in the printable configuration.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, describeConfig, loadConfig } from "../../src/service/config.js";

const base = {
  TOLLGATE_MASTER_KEY: "ab".repeat(32),
  TOLLGATE_ADMIN_TOKEN: `tga_${"x".repeat(40)}`,
  TOLLGATE_PUBLIC_URL: "https://tollgate.example.com",
};
const load = (env: Record<string, string>) => loadConfig([], { ...base, ...env });
const issuesOf = async (env: Record<string, string>) => {
  const err = await load(env).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ConfigError);
  return (err as ConfigError).issues.join("\n");
};

describe("SMTP settings", () => {
  it("is off without SMTP_HOST", async () => {
    expect((await load({})).smtp).toBeUndefined();
  });

  it("defaults to STARTTLS on 587 and implicit TLS on 465", async () => {
    expect((await load({ SMTP_HOST: "mail.example.com" })).smtp).toMatchObject({
      port: 587,
      tls: "starttls",
    });
    expect((await load({ SMTP_HOST: "mail.example.com", SMTP_PORT: "465" })).smtp).toMatchObject({
      port: 465,
      tls: "implicit",
    });
    expect((await load({ SMTP_HOST: "m", SMTP_SECURE: "true" })).smtp).toMatchObject({
      port: 465,
      tls: "implicit",
    });
    expect((await load({ SMTP_HOST: "m", SMTP_PORT: "2525", SMTP_TLS: "none" })).smtp).toMatchObject({
      port: 2525,
      tls: "none",
    });
  });

  it("reads the password from a file and keeps it out of the printable configuration", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tg-smtp-"));
    const file = path.join(dir, "password");
    writeFileSync(file, "s3cr3t-pass\n");
    const c = await load({
      SMTP_HOST: "m",
      SMTP_USER: "tollgate",
      SMTP_PASSWORD_FILE: file,
      SMTP_FROM: "Tollgate <t@example.com>",
    });
    expect(c.smtp).toMatchObject({
      user: "tollgate",
      password: "s3cr3t-pass",
      from: "Tollgate <t@example.com>",
    });
    expect(JSON.stringify(describeConfig(c))).not.toContain("s3cr3t-pass");
  });

  it("names the variable of every invalid setting", async () => {
    expect(await issuesOf({ SMTP_HOST: "m", SMTP_PASSWORD: "p" })).toContain(
      "SMTP_USER: required when a password is set",
    );
    expect(await issuesOf({ SMTP_USER: "u" })).toContain("SMTP_USER: requires SMTP_HOST");
    expect(await issuesOf({ SMTP_HOST: "m", SMTP_TLS: "maybe" })).toContain("SMTP_TLS");
    expect(await issuesOf({ SMTP_HOST: "m", SMTP_PORT: "70000" })).toContain("SMTP_PORT");
  });
});

describe("OIDC settings", () => {
  it("is off without an issuer or the development provider", async () => {
    expect((await load({})).oidc).toBeUndefined();
  });

  it("takes issuer, client and secret (from a file) for any provider", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "tg-oidc-"));
    const file = path.join(dir, "secret");
    writeFileSync(file, "client-secret-value\n");
    const c = await load({
      OIDC_ISSUER_URL: "https://login.example.com/realms/acme",
      OIDC_CLIENT_ID: "tollgate",
      OIDC_CLIENT_SECRET_FILE: file,
    });
    expect(c.oidc).toEqual({
      issuerUrl: "https://login.example.com/realms/acme",
      clientId: "tollgate",
      clientSecret: "client-secret-value",
      redirectUrl: null,
      scopes: "openid email profile",
      dev: null,
      allowInsecureHttp: false,
    });
    expect(JSON.stringify(describeConfig(c))).not.toContain("client-secret-value");
  });

  it("enables the development provider only when asked, never in production", async () => {
    const c = await load({
      TOLLGATE_DEV_OIDC: "true",
      TOLLGATE_DEV_OIDC_USERS: "Alice@Example.com, bob@example.com",
    });
    expect(c.oidc?.dev).toEqual({ users: ["alice@example.com", "bob@example.com"] });
    expect(await issuesOf({ TOLLGATE_DEV_OIDC: "true", NODE_ENV: "production" })).toContain(
      "TOLLGATE_DEV_OIDC: the development provider is refused when NODE_ENV=production",
    );
    expect(
      await issuesOf({ TOLLGATE_DEV_OIDC: "true", OIDC_ISSUER_URL: "https://login.example.com" }),
    ).toContain("TOLLGATE_DEV_OIDC: cannot be combined with OIDC_ISSUER_URL");
    expect(
      await issuesOf({ TOLLGATE_DEV_OIDC: "true", TOLLGATE_DEV_OIDC_USERS: "not-an-address" }),
    ).toContain("TOLLGATE_DEV_OIDC_USERS");
    expect(await issuesOf({ TOLLGATE_DEV_OIDC: "yes" })).toContain("TOLLGATE_DEV_OIDC");
  });

  it("refuses a plain http:// issuer unless OIDC_ALLOW_INSECURE_HTTP=true, which production refuses", async () => {
    const http = { OIDC_ISSUER_URL: "http://dex.local:5556/dex", OIDC_CLIENT_ID: "tollgate" };
    expect(await issuesOf(http)).toContain(
      "OIDC_ISSUER_URL: plain http:// is refused (the client secret, codes and tokens would travel unencrypted); use https://, or set OIDC_ALLOW_INSECURE_HTTP=true for development",
    );
    const allowed = await load({ ...http, OIDC_ALLOW_INSECURE_HTTP: "true" });
    expect(allowed.oidc).toMatchObject({ issuerUrl: http.OIDC_ISSUER_URL, allowInsecureHttp: true });
    expect(await issuesOf({ ...http, OIDC_ALLOW_INSECURE_HTTP: "true", NODE_ENV: "production" })).toBe(
      "OIDC_ALLOW_INSECURE_HTTP: refused when NODE_ENV=production",
    );
    expect(await issuesOf({ ...http, OIDC_ALLOW_INSECURE_HTTP: "maybe" })).toContain(
      "OIDC_ALLOW_INSECURE_HTTP",
    );
    // https needs no flag; the development provider implies it (its issuer is the public URL).
    const https = await load({ ...http, OIDC_ISSUER_URL: "https://dex.example.com" });
    expect(https.oidc).toMatchObject({ issuerUrl: "https://dex.example.com", allowInsecureHttp: false });
    const dev = await load({ TOLLGATE_DEV_OIDC: "true" });
    expect(dev.oidc?.allowInsecureHttp).toBe(true);
  });

  it("names the variable of every invalid setting", async () => {
    expect(await issuesOf({ OIDC_ISSUER_URL: "https://login.example.com" })).toContain(
      "OIDC_CLIENT_ID: required with OIDC_ISSUER_URL",
    );
    expect(await issuesOf({ OIDC_CLIENT_ID: "x" })).toContain("OIDC_CLIENT_ID: requires OIDC_ISSUER_URL");
    expect(await issuesOf({ OIDC_ISSUER_URL: "not a url", OIDC_CLIENT_ID: "x" })).toContain(
      "OIDC_ISSUER_URL",
    );
    expect(
      await issuesOf({ OIDC_ISSUER_URL: "https://l.example.com", OIDC_CLIENT_ID: "x", OIDC_SCOPES: "email" }),
    ).toContain("OIDC_SCOPES: must contain openid");
  });
});
