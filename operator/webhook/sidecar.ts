/**
 * What the admission webhook injects: the Tollgate sidecar's names, labels and annotations, its
 * settings (InjectionConfig, from the operator configuration), and the pure builders of its
 * container (image, ports, probes, resources, TOLLGATE_* environment) and volumes (the pod's
 * identity — a projected service account token by default, or the namespace's API-key Secret —
 * and the upstream credential Secrets). ./patch.ts decides whether a pod gets it and builds the
 * JSON Patch that adds it.
 */

/** Labels and annotations the webhook reads or writes. */
export const Labels = {
  injection: "tollgate.dev/injection",
  organization: "tollgate.dev/organization",
  /** Set by the webhook on every injected pod (value {@link SIDECAR_LABEL_VALUE}): what a PodMonitor selects. */
  sidecar: "tollgate.dev/sidecar",
} as const;
/** Value of the {@link Labels.sidecar} label on injected pods. */
export const SIDECAR_LABEL_VALUE = "injected";
export const Annotations = {
  inject: "tollgate.dev/inject",
  injected: "tollgate.dev/injected",
  organization: "tollgate.dev/organization",
  agentName: "tollgate.dev/agent-name",
  upstreams: "tollgate.dev/upstreams",
  /** kubectl's default container for logs/exec: set to the agent's first container (container mode puts the sidecar first). */
  defaultContainer: "kubectl.kubernetes.io/default-container",
} as const;

/** Names of what gets injected. */
export const SIDECAR_CONTAINER = "tollgate-sidecar";
export const API_KEY_VOLUME = "tollgate-api-key";
/** Secret (in the pod's namespace) the operator mints the API key into, and its data key. */
export const API_KEY_SECRET = "tollgate-api-key";
export const API_KEY_SECRET_KEY = "api-key";
export const API_KEY_MOUNT_PATH = "/var/run/tollgate";
/** The projected service account token the sidecar authenticates with (auth serviceAccountToken). */
export const IDENTITY_VOLUME = "tollgate-identity";
export const IDENTITY_MOUNT_PATH = "/var/run/tollgate/identity";
export const IDENTITY_TOKEN_FILE = "token";
/** Upstream credential Secrets are mounted at `${CREDENTIALS_DIR}/<upstream name>/` (one file per key). */
export const CREDENTIALS_DIR = "/var/run/tollgate/credentials";
/** Prefix of the volume of upstream i's credential Secret. */
export const CREDENTIAL_VOLUME_PREFIX = "tollgate-cred-";

/**
 * How an injected sidecar authenticates to the service:
 * - serviceAccountToken (default): the pod's projected service account token (audience
 *   {@link InjectionConfig.tokenAudience}, rotated by the kubelet); the service verifies it with a
 *   TokenReview and records the pod's verified identity. No Secret is needed.
 * - apiKey: the namespace's API key from the Secret tollgate-api-key (what the operator mints when
 *   TOLLGATE_NAMESPACE_API_KEYS is on); the recorded identity is then only the agent's own label.
 */
export const SidecarAuth = { serviceAccountToken: "serviceAccountToken", apiKey: "apiKey" } as const;
export type SidecarAuth = (typeof SidecarAuth)[keyof typeof SidecarAuth];

/**
 * How the sidecar is added, and how it is up before the agent container starts:
 * - native (Kubernetes >= 1.29, SidecarContainers): the first init container with
 *   restartPolicy Always; the kubelet starts the app containers only after its startupProbe
 *   succeeds, and stops it after them.
 * - container (the fallback for older clusters): the first regular container, with a postStart
 *   hook that waits until the sidecar answers; the kubelet starts containers in order and waits
 *   for each postStart hook before starting the next one. Its stop order is not guaranteed.
 * In both modes the sidecar has startup, readiness and liveness probes on its probe face
 * (TOLLGATE_PROBE_ADDRESS, 0.0.0.0:{@link DEFAULT_SIDECAR_PORTS}.metrics, port `http-metrics`),
 * so the pod is Ready only while the sidecar takes calls.
 */
export const SidecarMode = { container: "container", native: "native" } as const;
export type SidecarMode = (typeof SidecarMode)[keyof typeof SidecarMode];

/** Image pull policies of a container. */
export const PullPolicy = { always: "Always", ifNotPresent: "IfNotPresent", never: "Never" } as const;
export type PullPolicy = (typeof PullPolicy)[keyof typeof PullPolicy];

/**
 * The sidecar's listen ports. gRPC (the agent's Invoke) and the HTTP face (MCP, /healthz, /readyz,
 * /metrics; it accepts calls with the pod's API key) listen on loopback only, so no other pod can
 * act with this pod's identity; the probe face (/healthz, /readyz, /metrics only) listens on the
 * pod IP for kubelet probes and Prometheus.
 */
export interface SidecarPorts {
  /** gRPC listener, 127.0.0.1 (container port `grpc`). */
  grpc: number;
  /** HTTP face with MCP, 127.0.0.1 (not declared as a container port: nothing outside the pod may reach it). */
  http: number;
  /** Probe face, 0.0.0.0 (container port `http-metrics`): probes and scrapes. */
  metrics: number;
}

/** Default ports: those the sidecar image listens on without configuration (Dockerfile EXPOSE 50051 9090). */
export const DEFAULT_SIDECAR_PORTS: Readonly<SidecarPorts> = { grpc: 50051, http: 9090, metrics: 9091 };

/** Names of the sidecar's container ports (Prometheus conventions: a PodMonitor's `port:`). */
export const PortName = { grpc: "grpc", metrics: "http-metrics" } as const;
export type PortName = (typeof PortName)[keyof typeof PortName];

/** Container resources of the injected sidecar (core/v1 ResourceRequirements, quantities as strings). */
export interface SidecarResources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

/** Injection settings from the operator configuration. */
export interface InjectionConfig {
  /** Sidecar image, e.g. ghcr.io/tollgate/sidecar:0.1.0 (its command runs dist/sidecar.js). */
  image: string;
  /** Default IfNotPresent. */
  imagePullPolicy?: PullPolicy;
  /** Governance service URL the sidecar calls (TOLLGATE_SERVICE_URL). */
  serviceUrl: string;
  mode?: SidecarMode;
  /** Listen ports; default {@link DEFAULT_SIDECAR_PORTS}. */
  ports?: SidecarPorts;
  /**
   * V8 flags as the sidecar's NODE_OPTIONS; default {@link SIDECAR_NODE_OPTIONS}. An empty string
   * sets no NODE_OPTIONS, so the image's default applies.
   */
  nodeOptions?: string;
  /** Container resources; default {@link DEFAULT_SIDECAR_RESOURCES}. */
  resources?: SidecarResources;
  /** Container securityContext; default: non-root uid 65532, no privilege escalation, no capabilities. */
  securityContext?: Record<string, unknown>;
  /**
   * OpenTelemetry settings of the sidecar: OTEL_* variables (e.g. OTEL_EXPORTER_OTLP_ENDPOINT)
   * set on it as they are; OTEL_SERVICE_NAME defaults to tollgate-sidecar. Empty: tracing off.
   */
  otelEnv?: Readonly<Record<string, string>>;
  /** How the sidecar authenticates; default {@link SidecarAuth.serviceAccountToken}. */
  auth?: SidecarAuth;
  /** Audience of the projected token; default "tollgate" (the service's TOLLGATE_TOKEN_AUDIENCE). */
  tokenAudience?: string;
  /** Lifetime of the projected token in seconds (≥ 600, the kubelet rotates it at 80%); default 600. */
  tokenExpirationSeconds?: number;
}

/**
 * V8 flags of the injected sidecar, as its NODE_OPTIONS (the sidecar image sets the same; an
 * MCP stdio upstream the sidecar spawns does not inherit them, it gets a minimal environment).
 * A 1 MiB semi-space keeps the young generation at ~3 MiB instead of up to 48 MiB; the
 * old-generation limit makes V8 collect before the heap grows into garbage. bench/memory: the
 * sidecar's heap in use peaks at 31-33 MiB under load with these flags and 42-44 MiB without a
 * limit (live heap after a full GC ~25 MiB), and RSS is the same with a limit of 64, 96 or
 * 128 MiB, so 128 MiB keeps about 3x the unbounded peak: running out of heap crashes the
 * sidecar, and with it every tool call of the pod.
 */
export const SIDECAR_NODE_OPTIONS = "--max-semi-space-size=1 --max-old-space-size=128";

/**
 * The postStart hook of the container mode: waits (up to 120 s) until the sidecar's probe face
 * answers /readyz: it listens only once gRPC and the HTTP face do, and is ready once its MCP
 * upstreams are connected (the startup probe asks the same). Runs with the
 * sidecar image's node; CommonJS, no dependencies.
 */
export const waitForSidecarScript = (port: number): string =>
  `const t=Date.now()+120e3;(function f(){require("http").get({host:"127.0.0.1",port:${port},path:"/readyz",timeout:1000},r=>{r.resume();if(r.statusCode===200)process.exit(0);setTimeout(f,100)}).on("error",()=>{if(Date.now()>t)process.exit(1);setTimeout(f,100)})})()`;

/**
 * The sidecar's container ports: `grpc` (loopback listener, declared for discovery) and
 * `http-metrics` (the probe face on the pod IP). A name in `taken` is left off its port (the
 * number stays declared) so the agent's port keeps it; probes then use the number.
 */
export function sidecarContainerPorts(
  ports: SidecarPorts,
  taken: ReadonlySet<string>,
): Array<Record<string, unknown>> {
  const port = (name: PortName, containerPort: number) => ({
    ...(taken.has(name) ? {} : { name }),
    containerPort,
    protocol: "TCP",
  });
  return [port(PortName.grpc, ports.grpc), port(PortName.metrics, ports.metrics)];
}

/**
 * The sidecar's probes on its probe face (`probePort`: the port name `http-metrics`, or the number
 * when the pod's own containers use that name): startup (/readyz: the agent containers start only
 * once the sidecar takes calls; up to 120 s), readiness (/readyz: listening, not draining, MCP
 * upstreams connected) and liveness (/healthz).
 */
export function sidecarProbes(probePort: string | number = PortName.metrics): Record<string, unknown> {
  const get = (path: string) => ({ httpGet: { path, port: probePort, scheme: "HTTP" } });
  return {
    startupProbe: { ...get("/readyz"), periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 120 },
    readinessProbe: { ...get("/readyz"), periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 3 },
    livenessProbe: { ...get("/healthz"), periodSeconds: 10, timeoutSeconds: 2, failureThreshold: 3 },
  };
}

/** Default sidecar resources: bench/memory measures 83–91 MiB RSS, so a 96Mi request and a 256Mi limit. */
export const DEFAULT_SIDECAR_RESOURCES: Readonly<SidecarResources> = {
  requests: { cpu: "50m", memory: "96Mi" },
  limits: { memory: "256Mi" },
};
const defaultSecurityContext = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
  runAsNonRoot: true,
  runAsUser: 65532,
  seccompProfile: { type: "RuntimeDefault" },
};

/**
 * The sidecar container for a pod of `organization` running agent `agentName`; `taken` are the
 * port names the pod's own containers use ({@link takenPortNames}).
 */
/** The sidecar's OTEL_* variables, sorted, with OTEL_SERVICE_NAME when tracing is configured. */
const otelEnvOf = (otel: Readonly<Record<string, string>> = {}): { name: string; value: string }[] =>
  Object.keys(otel).length === 0
    ? []
    : Object.entries({ OTEL_SERVICE_NAME: "tollgate-sidecar", ...otel })
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, value]) => ({ name, value }));

export function sidecarContainer(
  cfg: InjectionConfig,
  organization: string,
  agentName: string,
  upstreams: string | undefined,
  taken: ReadonlySet<string> = new Set(),
  credentialMounts: readonly VolumeMount[] = [],
): Record<string, unknown> {
  const ports = cfg.ports ?? DEFAULT_SIDECAR_PORTS;
  const nodeOptions = cfg.nodeOptions ?? SIDECAR_NODE_OPTIONS;
  const apiKey = cfg.auth === SidecarAuth.apiKey;
  const env = [
    { name: "TOLLGATE_SERVICE_URL", value: cfg.serviceUrl },
    apiKey
      ? { name: "TOLLGATE_API_KEY_FILE", value: `${API_KEY_MOUNT_PATH}/${API_KEY_SECRET_KEY}` }
      : { name: "TOLLGATE_SERVICE_TOKEN_FILE", value: `${IDENTITY_MOUNT_PATH}/${IDENTITY_TOKEN_FILE}` },
    { name: "TOLLGATE_ORGANIZATION", value: organization },
    { name: "TOLLGATE_AGENT_NAME", value: agentName },
    { name: "TOLLGATE_GRPC_ADDRESS", value: `127.0.0.1:${ports.grpc}` },
    { name: "TOLLGATE_HTTP_ADDRESS", value: `127.0.0.1:${ports.http}` },
    { name: "TOLLGATE_PROBE_ADDRESS", value: `0.0.0.0:${ports.metrics}` },
    ...(nodeOptions !== "" ? [{ name: "NODE_OPTIONS", value: nodeOptions }] : []),
    ...(upstreams !== undefined ? [{ name: "TOLLGATE_UPSTREAMS", value: upstreams }] : []),
    ...(credentialMounts.length ? [{ name: "TOLLGATE_CREDENTIALS_DIR", value: CREDENTIALS_DIR }] : []),
    ...otelEnvOf(cfg.otelEnv),
  ];
  return {
    name: SIDECAR_CONTAINER,
    image: cfg.image,
    imagePullPolicy: cfg.imagePullPolicy ?? PullPolicy.ifNotPresent,
    env,
    ports: sidecarContainerPorts(ports, taken),
    volumeMounts: [
      apiKey
        ? { name: API_KEY_VOLUME, mountPath: API_KEY_MOUNT_PATH, readOnly: true }
        : { name: IDENTITY_VOLUME, mountPath: IDENTITY_MOUNT_PATH, readOnly: true },
      ...credentialMounts,
    ],
    resources: structuredClone(cfg.resources ?? DEFAULT_SIDECAR_RESOURCES),
    securityContext: cfg.securityContext ?? defaultSecurityContext,
    ...sidecarProbes(taken.has(PortName.metrics) ? ports.metrics : PortName.metrics),
    ...(cfg.mode === SidecarMode.native
      ? { restartPolicy: "Always" }
      : {
          lifecycle: {
            postStart: { exec: { command: ["node", "-e", waitForSidecarScript(ports.metrics)] } },
          },
        }),
  };
}

/** The volume holding the namespace's API key (Secret tollgate-api-key, key api-key). */
export const apiKeyVolume = () => ({
  name: API_KEY_VOLUME,
  secret: {
    secretName: API_KEY_SECRET,
    items: [{ key: API_KEY_SECRET_KEY, path: API_KEY_SECRET_KEY }],
    defaultMode: 0o444,
  },
});

/**
 * The projected service account token volume: audience and lifetime from `cfg`, readable by the
 * sidecar's non-root user; mounted only into the sidecar.
 */
export const identityVolume = (cfg: InjectionConfig) => ({
  name: IDENTITY_VOLUME,
  projected: {
    defaultMode: 0o444,
    sources: [
      {
        serviceAccountToken: {
          audience: cfg.tokenAudience ?? "tollgate",
          expirationSeconds: cfg.tokenExpirationSeconds ?? 600,
          path: IDENTITY_TOKEN_FILE,
        },
      },
    ],
  },
});

/** A container's volume mount. */
export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly: true;
}

/** The Secret volumes and sidecar mounts of the upstreams' credentials, or why they are refused. */
export type CredentialVolumes =
  | { volumes: Record<string, unknown>[]; mounts: VolumeMount[] }
  | { error: string };

const UPSTREAM_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;
const SECRET_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * Reads `credentials.secretName` of each upstream of the parsed `tollgate.dev/upstreams`
 * annotation (a JSON list) and returns one Secret volume per upstream that has one, mounted
 * read-only at `${CREDENTIALS_DIR}/<upstream name>` in the sidecar. Only the Secret's name is in
 * the pod spec, never a value; the sidecar validates the rest of the entry.
 */
export function credentialVolumes(upstreams: unknown): CredentialVolumes {
  const volumes: Record<string, unknown>[] = [];
  const mounts: VolumeMount[] = [];
  if (!Array.isArray(upstreams)) return { volumes, mounts };
  for (const [i, u] of upstreams.entries()) {
    const credentials = (u as { credentials?: unknown } | null)?.credentials;
    if (credentials === undefined) continue;
    const upstream = (u as { name?: unknown }).name;
    const secretName = (credentials as { secretName?: unknown } | null)?.secretName;
    if (typeof upstream !== "string" || !UPSTREAM_NAME.test(upstream)) {
      return {
        error: `upstreams[${i}].name: must be letters, digits, '_', '.', '-' (1-63) when credentials are set`,
      };
    }
    if (typeof secretName !== "string" || secretName.length > 253 || !SECRET_NAME.test(secretName)) {
      return { error: `upstreams[${i}].credentials.secretName: must name a Secret in the pod's namespace` };
    }
    const name = `${CREDENTIAL_VOLUME_PREFIX}${i}`;
    volumes.push({ name, secret: { secretName, defaultMode: 0o444 } });
    mounts.push({ name, mountPath: `${CREDENTIALS_DIR}/${upstream}`, readOnly: true });
  }
  return { volumes, mounts };
}
