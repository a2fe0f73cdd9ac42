/**
 * Operator configuration from environment variables, validated once at start-up with zod
 * (errors name the variable). Secrets are never configuration values: the service admin token
 * is read from a file (a mounted Secret) on every call.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import os from "node:os";
import { z } from "zod";
import type { SidecarMode } from "./webhook/patch.js";

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
    /** Secret (in `namespace`) holding the CA and serving certificate. */
    tlsSecretName: string;
    certMode: CertMode;
    /** With cert-manager: directory with tls.crt and tls.key. */
    certDir: string;
  };
  sidecar: {
    image: string;
    /** URL the injected sidecars call (may differ from serviceUrl, e.g. a cluster DNS name). */
    serviceUrl: string;
    mode: SidecarMode;
  };
  health: { host: string; port: number };
  resyncMs: number;
  workers: number;
  logLevel: string;
}

const version = (() => {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      version?: string;
    };
    return pkg.version ?? "latest";
  } catch {
    return "latest";
  }
})();

/** Concurrent reconciles when TOLLGATE_WORKERS is not set. */
export const DEFAULT_WORKERS = 4;

const port = z.coerce.number().int().min(0).max(65535);
const seconds = z.coerce.number().positive().max(3600);

const EnvSchema = z.object({
  KUBECONFIG: z.string().min(1).optional(),
  TOLLGATE_SERVICE_URL: z.url(),
  TOLLGATE_ADMIN_TOKEN_FILE: z.string().min(1),
  TOLLGATE_OPERATOR_NAMESPACE: z.string().min(1).optional(),
  TOLLGATE_OPERATOR_IDENTITY: z.string().min(1).max(128).optional(),
  POD_NAME: z.string().min(1).optional(),
  TOLLGATE_LEASE_NAME: z.string().min(1).default("tollgate-operator"),
  TOLLGATE_LEASE_DURATION_SECONDS: seconds.default(15),
  TOLLGATE_LEASE_RENEW_DEADLINE_SECONDS: seconds.default(10),
  TOLLGATE_LEASE_RETRY_PERIOD_SECONDS: seconds.default(2),
  TOLLGATE_WEBHOOK_HOST: z.string().min(1).default("0.0.0.0"),
  TOLLGATE_WEBHOOK_PORT: port.default(9443),
  TOLLGATE_WEBHOOK_SERVICE_NAME: z.string().min(1).default("tollgate-operator"),
  TOLLGATE_WEBHOOK_EXTRA_SANS: z.string().default(""),
  TOLLGATE_WEBHOOK_CONFIGURATION: z.string().min(1).default("tollgate-sidecar-injector"),
  TOLLGATE_WEBHOOK_TLS_SECRET: z.string().min(1).default("tollgate-webhook-tls"),
  TOLLGATE_WEBHOOK_CERT_MODE: z.enum(["self-signed", "cert-manager"]).default("self-signed"),
  TOLLGATE_WEBHOOK_CERT_DIR: z.string().min(1).default("/tmp/k8s-webhook-server/serving-certs"),
  TOLLGATE_SIDECAR_IMAGE: z.string().min(1).default(`ghcr.io/tollgate/sidecar:${version}`),
  TOLLGATE_SIDECAR_SERVICE_URL: z.url().optional(),
  TOLLGATE_SIDECAR_MODE: z.enum(["container", "native"]).default("container"),
  TOLLGATE_HEALTH_HOST: z.string().min(1).default("0.0.0.0"),
  TOLLGATE_HEALTH_PORT: port.default(8081),
  TOLLGATE_RESYNC_SECONDS: z.coerce.number().min(0).max(86_400).default(300),
  TOLLGATE_WORKERS: z.coerce.number().int().min(1).max(64).default(DEFAULT_WORKERS),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

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
    throw new OperatorConfigError(parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`));
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
      tlsSecretName: e.TOLLGATE_WEBHOOK_TLS_SECRET,
      certMode: e.TOLLGATE_WEBHOOK_CERT_MODE,
      certDir: e.TOLLGATE_WEBHOOK_CERT_DIR,
    },
    sidecar: {
      image: e.TOLLGATE_SIDECAR_IMAGE,
      serviceUrl: e.TOLLGATE_SIDECAR_SERVICE_URL ?? e.TOLLGATE_SERVICE_URL,
      mode: e.TOLLGATE_SIDECAR_MODE,
    },
    health: { host: e.TOLLGATE_HEALTH_HOST, port: e.TOLLGATE_HEALTH_PORT },
    resyncMs: e.TOLLGATE_RESYNC_SECONDS * 1000,
    workers: e.TOLLGATE_WORKERS,
    logLevel: e.LOG_LEVEL,
  };
}
