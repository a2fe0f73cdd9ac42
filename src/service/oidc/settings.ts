/**
 * Settings of dashboard sign-in (spec: "Authentication" 2): OpenID Connect authorization code
 * flow with PKCE against any issuer, or the embedded development provider.
 */
import { createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";
import { z } from "zod";
import { deriveKey } from "../secrets.js";

/** Where the embedded development provider is mounted, relative to the public URL. */
export const DEV_OIDC_PATH = "/dev-oidc";
/** Client id the service registers with its own development provider. */
export const DEV_OIDC_CLIENT_ID = "tollgate-dashboard-dev";

/** Validated OIDC settings (env OIDC_*, TOLLGATE_DEV_OIDC*). `clientSecret` is a secret. */
export interface OidcConfig {
  /** Issuer of an external provider; null selects the embedded development provider. */
  issuerUrl: string | null;
  clientId: string;
  /** Confidential client secret; null for a public client (PKCE only). */
  clientSecret: string | null;
  /** Redirect URI registered with the provider; null means `${publicUrl}/auth/callback`. */
  redirectUrl: string | null;
  /** Space-separated scopes; always contains openid. */
  scopes: string;
  /** The embedded development provider, or null when it is off (the default). */
  dev: { users: string[] } | null;
  /**
   * DEVELOPMENT ONLY (OIDC_ALLOW_INSECURE_HTTP): lets `issuerUrl` be plain `http://`. Off, an
   * http issuer is refused: discovery, the code exchange (with the client secret) and the tokens
   * would travel unencrypted.
   */
  allowInsecureHttp: boolean;
}

/** The OIDC client parameters in effect once the public URL is known. */
export interface ResolvedOidc {
  issuerUrl: string;
  clientId: string;
  clientSecret: string | null;
  redirectUrl: string;
  scopes: string;
  dev: boolean;
  /** Plain http:// to the issuer is allowed: OIDC_ALLOW_INSECURE_HTTP, or the development provider. */
  allowInsecureHttp: boolean;
}

/** Secret of the development client, derived from the master key (stable across restarts). */
export const devClientSecret = (masterKey: Buffer): string =>
  createHmac("sha256", deriveKey(masterKey, "session")).update("dev-oidc-client-secret").digest("base64url");

/** Fills the defaults that depend on the public URL and the master key. */
export function resolveOidc(c: OidcConfig, publicUrl: string, masterKey: Buffer): ResolvedOidc {
  const base = publicUrl.replace(/\/$/, "");
  return {
    issuerUrl: c.dev ? `${base}${DEV_OIDC_PATH}` : c.issuerUrl!,
    clientId: c.dev ? DEV_OIDC_CLIENT_ID : c.clientId,
    clientSecret: c.dev ? devClientSecret(masterKey) : c.clientSecret,
    redirectUrl: c.redirectUrl ?? `${base}/auth/callback`,
    scopes: c.scopes,
    dev: c.dev !== null,
    allowInsecureHttp: c.dev !== null || c.allowInsecureHttp,
  };
}

const boolText = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");

/** Environment variables of dashboard sign-in (merged into the service's EnvSchema). */
export const OidcEnvSchema = z.object({
  OIDC_ISSUER_URL: z.string().url().optional(),
  OIDC_CLIENT_ID: z.string().min(1).max(500).optional(),
  OIDC_CLIENT_SECRET: z.string().min(1).optional(),
  OIDC_CLIENT_SECRET_FILE: z.string().min(1).optional(),
  OIDC_REDIRECT_URL: z.string().url().optional(),
  OIDC_SCOPES: z
    .string()
    .regex(/(^|\s)openid(\s|$)/, "must contain openid")
    .default("openid email profile"),
  OIDC_ALLOW_INSECURE_HTTP: boolText.default(false),
  TOLLGATE_DEV_OIDC: boolText.default(false),
  TOLLGATE_DEV_OIDC_USERS: z
    .string()
    .default("")
    .transform((s) =>
      s
        .split(",")
        .map((u) => u.trim().toLowerCase())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().email("must be a comma-separated list of e-mail addresses"))),
  NODE_ENV: z.string().optional(),
});

/**
 * OIDC settings from validated env; undefined when neither OIDC_ISSUER_URL nor
 * TOLLGATE_DEV_OIDC is set (sign-in then shows how to configure it). Reads
 * OIDC_CLIENT_SECRET_FILE. Pushes messages naming the variable into `issues`.
 */
export async function oidcFromEnv(
  e: z.infer<typeof OidcEnvSchema>,
  issues: string[],
): Promise<OidcConfig | undefined> {
  if (e.TOLLGATE_DEV_OIDC) {
    if (e.OIDC_ISSUER_URL) issues.push("TOLLGATE_DEV_OIDC: cannot be combined with OIDC_ISSUER_URL");
    if (e.NODE_ENV === "production")
      issues.push("TOLLGATE_DEV_OIDC: the development provider is refused when NODE_ENV=production");
    return {
      issuerUrl: null,
      clientId: DEV_OIDC_CLIENT_ID,
      clientSecret: null,
      redirectUrl: e.OIDC_REDIRECT_URL ?? null,
      scopes: e.OIDC_SCOPES,
      dev: { users: e.TOLLGATE_DEV_OIDC_USERS },
      allowInsecureHttp: true,
    };
  }
  if (!e.OIDC_ISSUER_URL) {
    for (const k of ["OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_CLIENT_SECRET_FILE"] as const) {
      if (e[k] !== undefined) issues.push(`${k}: requires OIDC_ISSUER_URL`);
    }
    return undefined;
  }
  if (!e.OIDC_CLIENT_ID) issues.push("OIDC_CLIENT_ID: required with OIDC_ISSUER_URL");
  const plainHttp = new URL(e.OIDC_ISSUER_URL).protocol === "http:";
  if (plainHttp && !e.OIDC_ALLOW_INSECURE_HTTP) {
    issues.push(
      "OIDC_ISSUER_URL: plain http:// is refused (the client secret, codes and tokens would travel unencrypted); use https://, or set OIDC_ALLOW_INSECURE_HTTP=true for development",
    );
  }
  if (e.OIDC_ALLOW_INSECURE_HTTP && e.NODE_ENV === "production") {
    issues.push("OIDC_ALLOW_INSECURE_HTTP: refused when NODE_ENV=production");
  }
  if (e.OIDC_CLIENT_SECRET && e.OIDC_CLIENT_SECRET_FILE) {
    issues.push("OIDC_CLIENT_SECRET_FILE: set either OIDC_CLIENT_SECRET or OIDC_CLIENT_SECRET_FILE");
  }
  const secret =
    e.OIDC_CLIENT_SECRET ??
    (e.OIDC_CLIENT_SECRET_FILE ? (await readFile(e.OIDC_CLIENT_SECRET_FILE, "utf8")).trim() : null);
  return {
    issuerUrl: e.OIDC_ISSUER_URL,
    clientId: e.OIDC_CLIENT_ID ?? "",
    clientSecret: secret || null,
    redirectUrl: e.OIDC_REDIRECT_URL ?? null,
    scopes: e.OIDC_SCOPES,
    dev: null,
    allowInsecureHttp: e.OIDC_ALLOW_INSECURE_HTTP,
  };
}
