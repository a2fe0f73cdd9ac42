/**
 * Service configuration from environment variables and command-line flags, validated once at
 * start-up with zod. Flags win over environment. Secrets are read from the environment or from
 * files (never from flags, which show in `ps`).
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { Command } from "commander";
import { z } from "zod";
import { issueLines } from "../contract/v1/issues.js";
import { TelemetryEnvSchema } from "../telemetry/config.js";
import { VERSION } from "../version.js";
import { describeSmtp, type SmtpConfig, SmtpEnvSchema, smtpFromEnv } from "./notify/smtp.js";
import { type OidcConfig, OidcEnvSchema, oidcFromEnv } from "./oidc/settings.js";
import { type KeyConfig, RevokeKeysSchema, RotateKeysSchema } from "./receipts/key-config.js";

const EnvSchema = z.object({
  PORT: z.coerce
    .number({ error: "must be a port number (0-65535)" })
    .int({ error: "must be a port number (0-65535)" })
    .min(0, { error: "must be a port number (0-65535)" })
    .max(65535, { error: "must be a port number (0-65535)" })
    .default(8000),
  HOST: z.string().min(1).default("127.0.0.1"),
  TOLLGATE_DATA_DIR: z.string().min(1).default(".tollgate"),
  DATABASE_URL: z.string().url().optional(),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  TOLLGATE_PUBLIC_URL: z.string().url().optional(),
  TOLLGATE_MASTER_KEY: z.string().min(32).optional(),
  TOLLGATE_MASTER_KEY_FILE: z.string().optional(),
  TOLLGATE_ADMIN_TOKEN: z.string().min(32).optional(),
  TOLLGATE_ADMIN_TOKEN_FILE: z.string().optional(),
  TOLLGATE_SCHEDULER_INTERVAL_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  TOLLGATE_WORKLOAD_IDENTITY: z.enum(["auto", "on", "off"]).default("auto"),
  TOLLGATE_KUBECONFIG: z.string().min(1).optional(),
  TOLLGATE_TOKEN_AUDIENCE: z.string().min(1).max(253).default("tollgate"),
  TOLLGATE_TRUST_DOMAIN: z
    .string()
    .regex(/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/, "must be a lowercase DNS-style name (SPIFFE trust domain)")
    .max(253)
    .default("cluster.local"),
  TOLLGATE_ROTATE_KEYS: z.string().max(4096).optional(),
  TOLLGATE_REVOKE_KEYS: z.string().max(65_536).optional(),
  TOLLGATE_TOKEN_REVIEW_CACHE_SECONDS: z.coerce.number().min(0).max(600).default(10),
  KUBERNETES_SERVICE_HOST: z.string().optional(),
  ...SmtpEnvSchema.shape,
  ...OidcEnvSchema.shape,
});
/** With the OTEL_* variables, checked with the rest before any dev secret is written (issue 29). */
const StartupEnvSchema = EnvSchema.extend(TelemetryEnvSchema.shape);

/** Validated service configuration. `masterKey` and `adminToken` are secrets. */
export interface ServiceConfig {
  port: number;
  host: string;
  dataDir: string;
  /** PostgreSQL connection string; undefined selects embedded PGlite in dataDir. */
  databaseUrl?: string;
  databasePoolMax: number;
  publicUrl: string;
  /** 32+ bytes; every service key (receipt HMAC, key sealing, link signing) derives from it. */
  masterKey: Buffer;
  /** Bearer token of the service operator (the Kubernetes operator, bootstrap). */
  adminToken: string;
  schedulerIntervalMs: number;
  logLevel: string;
  /** Approval mail delivery; undefined leaves mail queued in the outbox. */
  smtp?: SmtpConfig;
  /** Dashboard sign-in; undefined disables sign-in. */
  oidc?: OidcConfig;
  /** Workload identity (TokenReview of pods' projected tokens); undefined turns it off. */
  workloadIdentity?: WorkloadIdentityConfig;
  /** Key rotations and revocations the deployment asks for, applied at start (ADR 0010). */
  keys: KeyConfig;
}

/** How workload tokens are verified (issue 27). */
export interface WorkloadIdentityConfig {
  /** kubeconfig of the API server to ask; undefined uses the in-cluster service account. */
  kubeconfig?: string;
  /** Audience the tokens must carry. */
  audience: string;
  /** SPIFFE trust domain of recorded identities. */
  trustDomain: string;
  /** Upper bound of how long a reviewed token is remembered, seconds. */
  cacheSeconds: number;
}

/** Thrown when configuration is invalid; `issues` name the variables. */
export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`Invalid configuration:\n  ${issues.join("\n  ")}`);
    this.name = "ConfigError";
  }
}

const help = `Environment:
  PORT                         HTTP port (default 8000)
  HOST                         bind address (default 127.0.0.1; use 0.0.0.0 in containers)
  TOLLGATE_DATA_DIR            where embedded PGlite and generated dev secrets live (default .tollgate)
  DATABASE_URL                 PostgreSQL URL; when unset, embedded PGlite is used
  DATABASE_POOL_MAX            pg pool size (default 10)
  TOLLGATE_PUBLIC_URL          base URL used in links (default http://localhost:PORT)
  TOLLGATE_MASTER_KEY[_FILE]   32+ byte secret (hex or base64); generated into the data dir if unset
  TOLLGATE_ADMIN_TOKEN[_FILE]  service admin bearer token; generated into the data dir if unset
  TOLLGATE_SCHEDULER_INTERVAL_MS  durable job poll interval (default 1000)
  LOG_LEVEL                    fatal|error|warn|info|debug|trace|silent (default info)
  TOLLGATE_WORKLOAD_IDENTITY   auto|on|off: verify pods' projected service account tokens with TokenReview
                               (default auto: on inside Kubernetes or with TOLLGATE_KUBECONFIG)
  TOLLGATE_KUBECONFIG          kubeconfig of the API server to ask (default: the in-cluster service account)
  TOLLGATE_TOKEN_AUDIENCE      audience workload tokens must carry (default tollgate)
  TOLLGATE_TRUST_DOMAIN        SPIFFE trust domain of recorded identities (default cluster.local)
  TOLLGATE_TOKEN_REVIEW_CACHE_SECONDS  how long a reviewed token is remembered, at most (default 10)
  TOLLGATE_ROTATE_KEYS         JSON {receipt?, approval?, receipt_hmac?}: a new token rotates that key at start
  TOLLGATE_REVOKE_KEYS         JSON [{kind, kid, revoked_at, organization?, reason?}]: keys revoked at start
  SMTP_HOST, SMTP_PORT         approval mail server; unset keeps mail queued in the outbox
  SMTP_TLS                     implicit|starttls|opportunistic|none (default starttls; implicit on port 465)
  SMTP_USER, SMTP_PASSWORD[_FILE]  SMTP credentials
  SMTP_FROM                    sender (default "Tollgate <tollgate@localhost>")
  SMTP_CA_FILE, SMTP_TIMEOUT_MS    extra trusted CA (PEM); connect/greeting/socket timeout (default 20000)
  OIDC_ISSUER_URL              OpenID provider of dashboard sign-in
  OIDC_CLIENT_ID, OIDC_CLIENT_SECRET[_FILE]  registered client (secret optional: public client with PKCE)
  OIDC_REDIRECT_URL            default TOLLGATE_PUBLIC_URL/auth/callback
  OIDC_SCOPES                  default "openid email profile"
  OIDC_ALLOW_INSECURE_HTTP=true  DEVELOPMENT ONLY: allow a plain http:// OIDC_ISSUER_URL (refused otherwise)
  TOLLGATE_DEV_OIDC=true       DEVELOPMENT ONLY: embedded OpenID provider at /dev-oidc, no passwords
  TOLLGATE_DEV_OIDC_USERS      extra e-mail addresses listed on the development sign-in page`;

/** Parses argv and env into a ServiceConfig; generates dev secrets into the data dir when absent. */
export async function loadConfig(argv: string[], env: NodeJS.ProcessEnv): Promise<ServiceConfig> {
  const program = new Command()
    .name("tollgate-service")
    .description("Tollgate governance service: chains, policy decisions, approvals and signed receipts.")
    .version(VERSION)
    .option("-p, --port <port>", "HTTP port (env PORT)")
    .option("--host <host>", "bind address (env HOST)")
    .option("--data-dir <dir>", "data directory for PGlite and dev secrets (env TOLLGATE_DATA_DIR)")
    .option("--log-level <level>", "log level (env LOG_LEVEL)")
    .addHelpText("after", `\n${help}`)
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  program.parse(argv, { from: "user" });
  const flags = program.opts<{ port?: string; host?: string; dataDir?: string; logLevel?: string }>();
  const parsed = StartupEnvSchema.safeParse({
    ...env,
    ...(flags.port !== undefined && { PORT: flags.port }),
    ...(flags.host !== undefined && { HOST: flags.host }),
    ...(flags.dataDir !== undefined && { TOLLGATE_DATA_DIR: flags.dataDir }),
    ...(flags.logLevel !== undefined && { LOG_LEVEL: flags.logLevel }),
  });
  if (!parsed.success) {
    // A value given as a flag is named as the flag the user typed.
    const flagOf: Record<string, string | undefined> = {
      PORT: flags.port !== undefined ? "--port" : undefined,
      HOST: flags.host !== undefined ? "--host" : undefined,
      TOLLGATE_DATA_DIR: flags.dataDir !== undefined ? "--data-dir" : undefined,
      LOG_LEVEL: flags.logLevel !== undefined ? "--log-level" : undefined,
    };
    throw new ConfigError(issueLines(parsed.error, { first: (variable) => flagOf[variable] ?? variable }));
  }
  const e = parsed.data;
  const dataDir = path.resolve(e.TOLLGATE_DATA_DIR);
  const masterKeyText =
    e.TOLLGATE_MASTER_KEY ??
    (e.TOLLGATE_MASTER_KEY_FILE
      ? (await readFile(e.TOLLGATE_MASTER_KEY_FILE, "utf8")).trim()
      : await devSecret(dataDir, "master.key", () => randomBytes(32).toString("hex")));
  const adminToken =
    e.TOLLGATE_ADMIN_TOKEN ??
    (e.TOLLGATE_ADMIN_TOKEN_FILE
      ? (await readFile(e.TOLLGATE_ADMIN_TOKEN_FILE, "utf8")).trim()
      : await devSecret(dataDir, "admin-token", () => `tga_${randomBytes(32).toString("base64url")}`));
  const masterKey = decodeKey(masterKeyText);
  if (masterKey.length < 32) throw new ConfigError(["TOLLGATE_MASTER_KEY: must decode to at least 32 bytes"]);
  const issues: string[] = [];
  const smtp = await smtpFromEnv(e, issues);
  const oidc = await oidcFromEnv(e, issues);
  const identityOn =
    e.TOLLGATE_WORKLOAD_IDENTITY === "on" ||
    (e.TOLLGATE_WORKLOAD_IDENTITY === "auto" && (e.KUBERNETES_SERVICE_HOST || e.TOLLGATE_KUBECONFIG));
  if (e.TOLLGATE_WORKLOAD_IDENTITY === "on" && !e.KUBERNETES_SERVICE_HOST && !e.TOLLGATE_KUBECONFIG)
    issues.push(
      "TOLLGATE_WORKLOAD_IDENTITY: on needs Kubernetes: run in a cluster or set TOLLGATE_KUBECONFIG",
    );
  const keys: KeyConfig = {
    rotate: jsonEnv("TOLLGATE_ROTATE_KEYS", e.TOLLGATE_ROTATE_KEYS, RotateKeysSchema, {}, issues),
    revoke: jsonEnv("TOLLGATE_REVOKE_KEYS", e.TOLLGATE_REVOKE_KEYS, RevokeKeysSchema, [], issues),
  };
  if (issues.length) throw new ConfigError(issues);
  return {
    keys,
    port: e.PORT,
    host: e.HOST,
    dataDir,
    databaseUrl: e.DATABASE_URL,
    databasePoolMax: e.DATABASE_POOL_MAX,
    publicUrl: (e.TOLLGATE_PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/$/, ""),
    masterKey,
    adminToken,
    schedulerIntervalMs: e.TOLLGATE_SCHEDULER_INTERVAL_MS,
    logLevel: e.LOG_LEVEL,
    ...(smtp && { smtp }),
    ...(oidc && { oidc }),
    ...(identityOn && {
      workloadIdentity: {
        ...(e.TOLLGATE_KUBECONFIG && { kubeconfig: e.TOLLGATE_KUBECONFIG }),
        audience: e.TOLLGATE_TOKEN_AUDIENCE,
        trustDomain: e.TOLLGATE_TRUST_DOMAIN,
        cacheSeconds: e.TOLLGATE_TOKEN_REVIEW_CACHE_SECONDS,
      },
    }),
  };
}

/**
 * A variable holding JSON checked by `schema`; `fallback` when unset or empty. Problems are
 * added to `issues`, naming the variable and the field.
 */
function jsonEnv<T>(
  name: string,
  text: string | undefined,
  schema: z.ZodType<T>,
  fallback: T,
  issues: string[],
): T {
  if (text === undefined || text.trim() === "") return fallback;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    issues.push(`${name}: not JSON`);
    return fallback;
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const i of parsed.error.issues.slice(0, 3))
    issues.push(`${name}: ${i.path.join(".") || "(root)"}: ${i.message}`);
  return fallback;
}

/** The configuration as it may be printed: no secrets, the database URL without credentials. */
export function describeConfig(c: ServiceConfig): Record<string, unknown> {
  let database = "pglite (embedded)";
  if (c.databaseUrl) {
    const u = new URL(c.databaseUrl);
    database = `postgresql://${u.host}${u.pathname}`;
  }
  return {
    port: c.port,
    host: c.host,
    dataDir: c.dataDir,
    database,
    databasePoolMax: c.databasePoolMax,
    publicUrl: c.publicUrl,
    schedulerIntervalMs: c.schedulerIntervalMs,
    logLevel: c.logLevel,
    masterKey: "(set)",
    adminToken: "(set)",
    smtp: c.smtp ? describeSmtp(c.smtp) : null,
    workloadIdentity: c.workloadIdentity ?? "off",
    oidc: c.oidc
      ? {
          issuer: c.oidc.dev ? "embedded development provider (/dev-oidc)" : c.oidc.issuerUrl,
          clientId: c.oidc.clientId,
        }
      : null,
  };
}

function decodeKey(text: string): Buffer {
  if (/^[0-9a-f]+$/i.test(text) && text.length % 2 === 0) return Buffer.from(text, "hex");
  return Buffer.from(text, "base64");
}

/** Reads a generated development secret from the data dir, creating it (mode 0600) if missing. */
async function devSecret(dataDir: string, name: string, make: () => string): Promise<string> {
  const file = path.join(dataDir, name);
  try {
    return (await readFile(file, "utf8")).trim();
  } catch {
    await mkdir(dataDir, { recursive: true });
    const value = make();
    await writeFile(file, `${value}\n`, { mode: 0o600, flag: "wx" }).catch(async (err) => {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    });
    await chmod(file, 0o600);
    return (await readFile(file, "utf8")).trim();
  }
}
