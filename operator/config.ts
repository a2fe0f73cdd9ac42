/**
 * Operator configuration from environment variables, validated once at start-up with zod
 * (errors name the variable). Secrets are never configuration values: the service admin token
 * is read from a file (a mounted Secret) on every call.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import os from "node:os";
import { z } from "zod";
import { issueLines } from "../src/contract/v1/issues.js";
import { TelemetryEnvSchema } from "../src/telemetry/config.js";
import { VERSION } from "../src/version.js";
import {
  DEFAULT_SIDECAR_PORTS,
  DEFAULT_SIDECAR_RESOURCES,
  type InjectionConfig,
  PullPolicy,
  SIDECAR_NODE_OPTIONS,
  SidecarAuth,
  type SidecarMode,
} from "./webhook/sidecar.js";

/** How the webhook gets its serving certificate. */
export const CertMode = { selfSigned: "self-signed", certManager: "cert-manager" } as const;
export type CertMode = (typeof CertMode)[keyof typeof CertMode];

/** The validated operator configuration. Durations in milliseconds. */
export interface OperatorConfig {
  /** Kubeconfig file; undefined uses the default chain (KUBECONFIG, ~/.kube/config, in-cluster). */
  kubeconfigPath?: string;
  /** Base URL of the governance service's admin API. */
  serviceUrl: string;
  /** File holding the service admin bearer token (mounted Secret). */
  adminTokenFile: string;
  /** Namespace the operator runs in (Lease, webhook TLS Secret; excluded from injection). */
  namespace: string;
  /** Unique identity of this replica in the Lease (the pod name in a cluster). */
  identity: string;
  lease: { name: string; durationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  webhook: {
    host: string;
    /** HTTPS port; 0 picks a free one (tests). */
    port: number;
    /** Service that fronts the webhook; its DNS names go into the serving certificate. */
    serviceName: string;
    /** Extra SANs for the serving certificate (e.g. 127.0.0.1). */
    extraSans: string[];
    /** MutatingWebhookConfiguration whose caBundle the operator keeps current. */
    configurationName: string;
    /** ValidatingWebhookConfiguration of GovernancePolicies whose caBundle the operator keeps current. */
    policyValidatorName: string;
    /** Secret (in `namespace`) holding the CA and serving certificate. */
    tlsSecretName: string;
    certMode: CertMode;
    /** With cert-manager: directory with tls.crt and tls.key. */
    certDir: string;
  };
  /** What the webhook injects: passed to the patch builder as it is (loadOperatorConfig fills every field). */
  sidecar: Omit<InjectionConfig, "securityContext"> & {
    /** URL the injected sidecars call (may differ from serviceUrl, e.g. a cluster DNS name). */
    serviceUrl: string;
    mode: SidecarMode;
  };
  health: { host: string; port: number };
  resyncMs: number;
  workers: number;
  logLevel: string;
}

/** Concurrent reconciles when TOLLGATE_WORKERS is not set. */
export const DEFAULT_WORKERS = 4;

const port = z.coerce.number().int().min(0).max(65535);
const listenPort = z.coerce.number().int().min(1).max(65535);
const seconds = z.coerce.number().positive().max(3600);

/** A Kubernetes resource quantity ("100m", "96Mi", "1.5", "2e3"); numbers become strings. */
const quantity = z
  .union([
    z.string().regex(/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?$/),
    z.number().nonnegative(),
  ])
  .transform(String);
const resourceList = z.record(z.string().min(1), quantity);
/** core/v1 ResourceRequirements as the chart renders it (`toJson .Values.sidecar.resources`). */
const ResourcesSchema = z.strictObject({
  requests: resourceList.optional(),
  limits: resourceList.optional(),
});

/** A string holding JSON, parsed and then validated by `schema`. */
const jsonOf = <T extends z.ZodType>(schema: T) =>
  z
    .string()
    .transform((text, ctx): unknown => {
      try {
        return JSON.parse(text);
      } catch {
        ctx.addIssue({ code: "custom", message: "must be JSON" });
        return z.NEVER;
      }
    })
    .pipe(schema);

/**
 * Why `nodeOptions` would stop the sidecar from starting, or null: each whitespace-separated token
 * must be a flag (`--name` or `--name=value`) that Node.js accepts in NODE_OPTIONS
 * (`process.allowedNodeEnvironmentFlags`; the operator and the sidecar image run the same Node.js).
 * A flag that Node.js refuses there would crash every injected sidecar, and with it every tool call.
 */
export function nodeOptionsProblem(nodeOptions: string): string | null {
  for (const token of nodeOptions.split(/\s+/).filter(Boolean)) {
    const flag = token.split("=", 1)[0] ?? "";
    if (!/^--?[A-Za-z]/.test(flag) || !process.allowedNodeEnvironmentFlags.has(flag))
      return `${token} is not a flag Node.js allows in NODE_OPTIONS`;
  }
  return null;
}

/** The operator's environment; each variable's description is its line in `--help`. */
const EnvSchema = z.object({
  KUBECONFIG: z
    .string()
    .min(1)
    .optional()
    .describe("kubeconfig file (default: ~/.kube/config, then in-cluster)"),
  TOLLGATE_SERVICE_URL: z.url().describe("governance service base URL (required)"),
  TOLLGATE_ADMIN_TOKEN_FILE: z.string().min(1).describe("file holding the service admin token (required)"),
  TOLLGATE_OPERATOR_NAMESPACE: z
    .string()
    .min(1)
    .optional()
    .describe("namespace of the Lease and webhook Secret (default: the pod's, else tollgate-system)"),
  TOLLGATE_OPERATOR_IDENTITY: z.string().min(1).max(128).optional().describe("this replica's Lease identity"),
  POD_NAME: z.string().min(1).optional().describe("pod name (the identity when the above is unset)"),
  TOLLGATE_LEASE_NAME: z.string().min(1).default("tollgate-operator").describe("leader election Lease"),
  TOLLGATE_LEASE_DURATION_SECONDS: seconds.default(15).describe("Lease duration in seconds"),
  TOLLGATE_LEASE_RENEW_DEADLINE_SECONDS: seconds.default(10).describe("leader renew deadline in seconds"),
  TOLLGATE_LEASE_RETRY_PERIOD_SECONDS: seconds.default(2).describe("Lease retry period in seconds"),
  TOLLGATE_WEBHOOK_HOST: z.string().min(1).default("0.0.0.0").describe("admission webhook listen address"),
  TOLLGATE_WEBHOOK_PORT: port.default(9443).describe("admission webhook HTTPS port"),
  TOLLGATE_WEBHOOK_SERVICE_NAME: z
    .string()
    .min(1)
    .default("tollgate-operator")
    .describe("Service fronting the webhook (certificate names)"),
  TOLLGATE_WEBHOOK_EXTRA_SANS: z.string().default("").describe("extra certificate SANs, comma-separated"),
  TOLLGATE_WEBHOOK_CONFIGURATION: z
    .string()
    .min(1)
    .default("tollgate-sidecar-injector")
    .describe("MutatingWebhookConfiguration whose caBundle is kept current"),
  TOLLGATE_POLICY_VALIDATOR_CONFIGURATION: z
    .string()
    .min(1)
    .default("tollgate-policy-validator")
    .describe("ValidatingWebhookConfiguration (GovernancePolicies) whose caBundle is kept current"),
  TOLLGATE_WEBHOOK_TLS_SECRET: z
    .string()
    .min(1)
    .default("tollgate-webhook-tls")
    .describe("webhook TLS Secret"),
  TOLLGATE_WEBHOOK_CERT_MODE: z
    .enum(["self-signed", "cert-manager"])
    .default("self-signed")
    .describe("self-signed | cert-manager"),
  TOLLGATE_WEBHOOK_CERT_DIR: z
    .string()
    .min(1)
    .default("/tmp/k8s-webhook-server/serving-certs")
    .describe("certificate directory with cert-manager"),
  TOLLGATE_SIDECAR_IMAGE: z
    .string()
    .min(1)
    .default(`ghcr.io/tollgate/sidecar:${VERSION}`)
    .describe("image of the injected sidecar"),
  TOLLGATE_SIDECAR_SERVICE_URL: z
    .url()
    .optional()
    .describe("service URL the sidecars call (default: the above)"),
  TOLLGATE_SIDECAR_MODE: z.enum(["container", "native"]).default("container").describe("container | native"),
  TOLLGATE_SIDECAR_AUTH: z
    .enum([SidecarAuth.serviceAccountToken, SidecarAuth.apiKey])
    .default(SidecarAuth.serviceAccountToken)
    .describe(
      "serviceAccountToken (the pod's projected token, verified by the service) | apiKey (a minted namespace API key in a Secret)",
    ),
  TOLLGATE_SIDECAR_TOKEN_AUDIENCE: z
    .string()
    .min(1)
    .max(253)
    .default("tollgate")
    .describe("audience of the sidecar's projected token (the service's TOLLGATE_TOKEN_AUDIENCE)"),
  TOLLGATE_SIDECAR_TOKEN_EXPIRATION_SECONDS: z.coerce
    .number()
    .int()
    .min(600)
    .max(86_400)
    .default(600)
    .describe("lifetime of the projected token in seconds (the kubelet rotates it at 80%)"),
  TOLLGATE_SIDECAR_IMAGE_PULL_POLICY: z
    .enum([PullPolicy.always, PullPolicy.ifNotPresent, PullPolicy.never])
    .default(PullPolicy.ifNotPresent)
    .describe("imagePullPolicy of the injected sidecar: Always | IfNotPresent | Never"),
  TOLLGATE_SIDECAR_RESOURCES: jsonOf(ResourcesSchema)
    .default(DEFAULT_SIDECAR_RESOURCES)
    .describe("resources of the injected sidecar, JSON {requests, limits}"),
  TOLLGATE_SIDECAR_OTEL_ENV: z
    .string()
    .default("{}")
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "must be a JSON object of OTEL_* variables" });
        return z.NEVER;
      }
    })
    .pipe(
      z.record(
        z.string().regex(/^OTEL_[A-Z0-9_]+$/, "keys must be OTEL_* variable names"),
        z.string().max(2000),
      ),
    )
    .describe("OpenTelemetry variables of the injected sidecar, JSON {OTEL_*: value}; {} leaves tracing off"),
  TOLLGATE_SIDECAR_NODE_OPTIONS: z
    .string()
    .trim()
    .superRefine((v, ctx) => {
      const problem = nodeOptionsProblem(v);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .default(SIDECAR_NODE_OPTIONS)
    .describe("NODE_OPTIONS (V8 flags) of the injected sidecar; empty keeps the image's default"),
  TOLLGATE_SIDECAR_GRPC_PORT: listenPort
    .default(DEFAULT_SIDECAR_PORTS.grpc)
    .describe("sidecar gRPC port on 127.0.0.1 (container port grpc)"),
  TOLLGATE_SIDECAR_HTTP_PORT: listenPort
    .default(DEFAULT_SIDECAR_PORTS.http)
    .describe("sidecar HTTP/MCP port on 127.0.0.1"),
  TOLLGATE_SIDECAR_METRICS_PORT: listenPort
    .default(DEFAULT_SIDECAR_PORTS.metrics)
    .describe("sidecar probe and metrics port on the pod IP (container port http-metrics)"),
  TOLLGATE_HEALTH_HOST: z
    .string()
    .min(1)
    .default("0.0.0.0")
    .describe("/healthz /readyz /metrics listen address"),
  TOLLGATE_HEALTH_PORT: port.default(8081).describe("/healthz /readyz /metrics port"),
  TOLLGATE_RESYNC_SECONDS: z.coerce.number().min(0).max(86_400).default(300).describe("full resync period"),
  TOLLGATE_WORKERS: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(DEFAULT_WORKERS)
    .describe("concurrent reconciles"),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"])
    .default("info")
    .describe("log level"),
});

/** The environment section of `--help`, generated from the schema (name, default, description). */
export function operatorEnvironmentHelp(): string {
  const lines = Object.entries(EnvSchema.shape).map(([name, schema]) => {
    const def =
      schema instanceof z.ZodDefault ? ` [default: ${JSON.stringify(schema.def.defaultValue)}]` : "";
    return `  ${name.padEnd(40)}${schema.description ?? ""}${def}`;
  });
  const otel = Object.keys(TelemetryEnvSchema.shape).join(", ");
  return `\nEnvironment:\n${lines.join("\n")}\n\nTracing (OpenTelemetry, off unless an endpoint is set; README "Operations → Tracing"):\n  ${otel}\n`;
}

/** Thrown for invalid configuration; the message names each variable. */
export class OperatorConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`Invalid operator configuration:\n  ${issues.join("\n  ")}`);
    this.name = "OperatorConfigError";
  }
}

function inClusterNamespace(): string | undefined {
  try {
    return (
      readFileSync("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "utf8").trim() || undefined
    );
  } catch {
    return undefined;
  }
}

/** Parses the environment into an {@link OperatorConfig}; throws OperatorConfigError. */
export function loadOperatorConfig(env: NodeJS.ProcessEnv = process.env): OperatorConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new OperatorConfigError(issueLines(parsed.error));
  }
  const e = parsed.data;
  const lease = {
    name: e.TOLLGATE_LEASE_NAME,
    durationMs: e.TOLLGATE_LEASE_DURATION_SECONDS * 1000,
    renewDeadlineMs: e.TOLLGATE_LEASE_RENEW_DEADLINE_SECONDS * 1000,
    retryPeriodMs: e.TOLLGATE_LEASE_RETRY_PERIOD_SECONDS * 1000,
  };
  if (lease.renewDeadlineMs >= lease.durationMs) {
    throw new OperatorConfigError([
      "TOLLGATE_LEASE_RENEW_DEADLINE_SECONDS: must be less than TOLLGATE_LEASE_DURATION_SECONDS",
    ]);
  }
  const ports = {
    grpc: e.TOLLGATE_SIDECAR_GRPC_PORT,
    http: e.TOLLGATE_SIDECAR_HTTP_PORT,
    metrics: e.TOLLGATE_SIDECAR_METRICS_PORT,
  };
  if (new Set(Object.values(ports)).size !== 3) {
    throw new OperatorConfigError([
      "TOLLGATE_SIDECAR_GRPC_PORT, TOLLGATE_SIDECAR_HTTP_PORT, TOLLGATE_SIDECAR_METRICS_PORT: must differ (one pod network namespace)",
    ]);
  }
  return {
    kubeconfigPath: e.KUBECONFIG,
    serviceUrl: e.TOLLGATE_SERVICE_URL,
    adminTokenFile: e.TOLLGATE_ADMIN_TOKEN_FILE,
    namespace: e.TOLLGATE_OPERATOR_NAMESPACE ?? inClusterNamespace() ?? "tollgate-system",
    identity:
      e.TOLLGATE_OPERATOR_IDENTITY ?? e.POD_NAME ?? `${os.hostname()}-${randomBytes(4).toString("hex")}`,
    lease,
    webhook: {
      host: e.TOLLGATE_WEBHOOK_HOST,
      port: e.TOLLGATE_WEBHOOK_PORT,
      serviceName: e.TOLLGATE_WEBHOOK_SERVICE_NAME,
      extraSans: e.TOLLGATE_WEBHOOK_EXTRA_SANS.split(",")
        .map((s) => s.trim())
        .filter(Boolean),
      configurationName: e.TOLLGATE_WEBHOOK_CONFIGURATION,
      policyValidatorName: e.TOLLGATE_POLICY_VALIDATOR_CONFIGURATION,
      tlsSecretName: e.TOLLGATE_WEBHOOK_TLS_SECRET,
      certMode: e.TOLLGATE_WEBHOOK_CERT_MODE,
      certDir: e.TOLLGATE_WEBHOOK_CERT_DIR,
    },
    sidecar: {
      image: e.TOLLGATE_SIDECAR_IMAGE,
      serviceUrl: e.TOLLGATE_SIDECAR_SERVICE_URL ?? e.TOLLGATE_SERVICE_URL,
      mode: e.TOLLGATE_SIDECAR_MODE,
      imagePullPolicy: e.TOLLGATE_SIDECAR_IMAGE_PULL_POLICY,
      resources: e.TOLLGATE_SIDECAR_RESOURCES,
      nodeOptions: e.TOLLGATE_SIDECAR_NODE_OPTIONS,
      otelEnv: e.TOLLGATE_SIDECAR_OTEL_ENV,
      ports,
      auth: e.TOLLGATE_SIDECAR_AUTH,
      tokenAudience: e.TOLLGATE_SIDECAR_TOKEN_AUDIENCE,
      tokenExpirationSeconds: e.TOLLGATE_SIDECAR_TOKEN_EXPIRATION_SECONDS,
    },
    health: { host: e.TOLLGATE_HEALTH_HOST, port: e.TOLLGATE_HEALTH_PORT },
    resyncMs: e.TOLLGATE_RESYNC_SECONDS * 1000,
    workers: e.TOLLGATE_WORKERS,
    logLevel: e.LOG_LEVEL,
  };
}
