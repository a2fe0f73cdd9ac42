/**
 * Sidecar configuration: environment variables (what the operator's admission webhook injects)
 * over an optional YAML or JSON file, validated once at start-up with zod; every error names
 * the variable or file key. The API key is read from a mounted file (the Secret the operator
 * mints), never from a flag or an environment value, so it never shows in `ps`.
 *
 * Environment (file key in brackets):
 *   TOLLGATE_SERVICE_URL      [service_url]      governance service base URL (required)
 *   TOLLGATE_SERVICE_TOKEN_FILE [service_token_file] the pod's projected service account token
 *                                                (audience tollgate), re-read as the kubelet
 *                                                rotates it; when set, the sidecar authenticates
 *                                                with it (verified workload identity) instead of
 *                                                an API key. The webhook sets
 *                                                /var/run/tollgate/identity/token
 *   TOLLGATE_API_KEY_FILE     [api_key_file]     file holding the client API key, when no token
 *                                                file is set (default /var/run/tollgate/api-key)
 *   TOLLGATE_ORGANIZATION     [organization]     organization slug (informational: logs,
 *                                                /readyz; the API key decides the organization)
 *   TOLLGATE_AGENT_NAME       [agent_name]       agent name of calls through the MCP face
 *                                                (default "mcp-agent")
 *   TOLLGATE_GRPC_ADDRESS     [grpc_address]     host:port of the gRPC server (127.0.0.1:50051)
 *   TOLLGATE_HTTP_ADDRESS     [http_address]     host:port of /healthz /readyz /metrics /mcp
 *                                                (127.0.0.1:9090)
 *   TOLLGATE_PROBE_ADDRESS    [probe_address]    host:port of a second listener with only
 *                                                /healthz /readyz /metrics (no /mcp), for
 *                                                kubelet probes and scrapers that reach the
 *                                                pod IP; off by default, the admission webhook
 *                                                sets 0.0.0.0:9091
 *   TOLLGATE_UPSTREAMS_FILE                      YAML/JSON file: a list of upstreams, or
 *                                                { upstreams: [...] }
 *   TOLLGATE_UPSTREAMS        [upstreams]        JSON list of upstreams (wins over the file)
 *   TOLLGATE_FAIL_MODES       [fail_modes]       JSON map action category → deny | allow
 *   TOLLGATE_MCP_UPSTREAM     [mcp_upstream]     the mcp upstream the MCP face mirrors
 *   TOLLGATE_MAX_PAYLOAD_BYTES [max_payload_bytes] largest Invoke payload as JSON (262144)
 *   TOLLGATE_DRAIN_TIMEOUT_MS [drain_timeout_ms] how long SIGTERM waits for in-flight calls
 *                                                (25000)
 *   TOLLGATE_BACKEND_TIMEOUT_SECONDS [backend_timeout_seconds] per-request timeout to the
 *                                                service (5)
 *   TOLLGATE_APPROVAL_TIMEOUT_HOURS [approval_timeout_hours] local approval wait window (24)
 *   TOLLGATE_SERVICE_PUBLIC_URL [service_public_url] the service's URL as people open it: review
 *                                                links point at its /dashboard/approvals
 *                                                (default TOLLGATE_SERVICE_URL)
 *   TOLLGATE_REATTACH_WINDOW_SECONDS [reattach_window_seconds] how long the outcome of a call
 *                                                whose caller left is kept for its retry, from
 *                                                the approval's resolution (600)
 *   TOLLGATE_MCP_SESSION_IDLE_SECONDS [mcp_session_idle_seconds] an MCP session with no request
 *                                                and no call in progress for this long expires
 *                                                and its chain is completed (1800)
 *   TOLLGATE_MCP_PROGRESS_INTERVAL_SECONDS [mcp_progress_interval_seconds] notifications/progress
 *                                                interval while a call waits (10, at most 15)
 *   TOLLGATE_MCP_ALLOWED_ORIGINS [mcp_allowed_origins] comma-separated Origins allowed on /mcp
 *                                                (an entry without a port allows every port);
 *                                                default local only: http(s)://localhost,
 *                                                127.0.0.1, [::1]; requests without Origin pass
 *   TOLLGATE_CREDENTIALS_DIR  [credentials_dir]  where the webhook mounts each upstream's
 *                                                credentials Secret, one folder per upstream
 *                                                (default /var/run/tollgate/credentials)
 *   TOLLGATE_CONFIG_FILE                         the YAML/JSON file (also `--config`)
 *   LOG_LEVEL                 [log_level]        fatal|error|warn|info|debug|trace|silent
 *
 * Upstreams: `{name, type: http, url, timeout_ms?, headers?, credentials?}` (JSON POST of the
 * payload), `{name, type: mcp, transport: streamable_http, url, timeout_ms?, credentials?}` and
 * `{name, type: mcp, transport: stdio, command, args?, env?, cwd?, timeout_ms?}`. `credentials`
 * names a Kubernetes Secret (never a value) mounted at `<credentials_dir>/<upstream name>/`;
 * see `CredentialsSchema` (upstreams/schema.ts) and docs/tool-credentials.md.
 */
import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { issueLines } from "../src/contract/v1/issues.js";
import { describeUpstream, httpUrl, name, UpstreamSchema } from "./upstreams/schema.js";

/** Default path of the mounted API key Secret. */
export const DEFAULT_API_KEY_FILE = "/var/run/tollgate/api-key";
/** Default folder of the upstreams' credentials Secrets (`<dir>/<upstream name>/<key>`). */
export const DEFAULT_CREDENTIALS_DIR = "/var/run/tollgate/credentials";

const address = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, "must be host:port")
  .refine((a) => Number(a.slice(a.lastIndexOf(":") + 1)) <= 65535, "port must be at most 65535");

const failModes = z.partialRecord(
  z.enum([
    "financial",
    "external_communication",
    "bulk_deletion",
    "bulk_operation",
    "irreversible",
    "llm_call",
    "default",
  ]),
  z.enum(["deny", "allow"]),
);

/** The file form (snake_case keys); every key optional. */
const FileSchema = z
  .object({
    service_url: httpUrl.optional(),
    api_key_file: z.string().min(1).optional(),
    service_token_file: z.string().min(1).optional(),
    organization: z.string().min(1).max(63).optional(),
    agent_name: z.string().min(1).max(200).optional(),
    grpc_address: address.optional(),
    http_address: address.optional(),
    probe_address: address.optional(),
    upstreams: z.array(z.unknown()).optional(),
    fail_modes: z.unknown().optional(),
    mcp_upstream: name.optional(),
    max_payload_bytes: z.number().int().positive().optional(),
    drain_timeout_ms: z.number().int().nonnegative().optional(),
    backend_timeout_seconds: z.number().positive().optional(),
    approval_timeout_hours: z.number().positive().optional(),
    service_public_url: httpUrl.optional(),
    reattach_window_seconds: z.number().positive().optional(),
    mcp_session_idle_seconds: z.number().positive().optional(),
    mcp_progress_interval_seconds: z.number().positive().optional(),
    mcp_allowed_origins: z.array(z.string()).optional(),
    credentials_dir: z.string().min(1).optional(),
    log_level: z.string().optional(),
  })
  .strict();

/** The Origins /mcp accepts by default: the local machine only (DNS rebinding protection). */
export const LOCAL_ORIGINS = [
  "http://localhost",
  "https://localhost",
  "http://127.0.0.1",
  "https://127.0.0.1",
  "http://[::1]",
  "https://[::1]",
] as const;

const origin = z
  .string()
  .trim()
  .regex(/^https?:\/\/(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/i, "must be scheme://host[:port]")
  .transform((o) => o.toLowerCase());

/** The validated configuration (camelCase). Holds no secret: the key stays in its file. */
export const SidecarConfigSchema = z
  .object({
    serviceUrl: httpUrl,
    apiKeyFile: z.string().min(1).default(DEFAULT_API_KEY_FILE),
    /** The pod's projected service account token; when set, used instead of the API key. */
    serviceTokenFile: z.string().min(1).nullable().default(null),
    organization: z.string().min(1).max(63).nullable().default(null),
    agentName: z.string().min(1).max(200).default("mcp-agent"),
    grpcAddress: address.default("127.0.0.1:50051"),
    httpAddress: address.default("127.0.0.1:9090"),
    /** Listener for kubelet probes and scrapers (pod IP): /healthz, /readyz, /metrics only. */
    probeAddress: address.nullable().default(null),
    upstreams: z.array(UpstreamSchema).default([]),
    failModes: failModes.nullable().default(null),
    mcpUpstream: name.nullable().default(null),
    /** Bytes of the payload as JSON; larger payloads are INVALID_ARGUMENT. Default 256 KiB. */
    maxPayloadBytes: z
      .number()
      .int()
      .positive()
      .max(16 * 1024 * 1024)
      .default(256 * 1024),
    /** ms; in-flight calls get this long to finish on SIGTERM. */
    drainTimeoutMs: z.number().int().nonnegative().max(600_000).default(25_000),
    /** Seconds; per-request timeout to the governance service. */
    backendTimeoutSeconds: z.number().positive().max(600).default(5),
    /** Hours; the local approval wait window. */
    approvalTimeoutHours: z.number().positive().max(8760).default(24),
    /** Base URL of the service's dashboard for people; null: serviceUrl. */
    servicePublicUrl: httpUrl.nullable().default(null),
    /** Seconds an outcome nobody received is kept for a retry after the approval's resolution. */
    reattachWindowSeconds: z.number().positive().max(86_400).default(600),
    /** Seconds without a request (and no call in progress) after which an MCP session expires. */
    mcpSessionIdleSeconds: z.number().positive().max(604_800).default(1800),
    /** Seconds between notifications/progress of a waiting tools/call (at most 15). */
    mcpProgressIntervalSeconds: z.number().positive().max(15).default(10),
    /** Origins allowed on /mcp (requests without Origin pass). */
    mcpAllowedOrigins: z.array(origin).default([...LOCAL_ORIGINS]),
    /** Folder of the upstreams' mounted credentials Secrets: `<dir>/<upstream name>/<key>`. */
    credentialsDir: z
      .string()
      .min(1)
      .refine((d) => d.startsWith("/"), "must be an absolute path")
      .default(DEFAULT_CREDENTIALS_DIR),
    logLevel: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  })
  .strict()
  .superRefine((c, ctx) => {
    const seen = new Set<string>();
    c.upstreams.forEach((u, i) => {
      if (seen.has(u.name))
        ctx.addIssue({
          code: "custom",
          path: ["upstreams", i, "name"],
          message: `duplicate upstream "${u.name}"`,
        });
      seen.add(u.name);
    });
    if (c.serviceTokenFile === null) {
      c.upstreams.forEach((u, i) => {
        if (u.credentials?.type === "token_exchange")
          ctx.addIssue({
            code: "custom",
            path: ["upstreams", i, "credentials", "type"],
            message: `token_exchange (upstream ${u.name}) exchanges the pod's service account token: set TOLLGATE_SERVICE_TOKEN_FILE`,
          });
      });
    }
    if (c.mcpUpstream !== null) {
      const u = c.upstreams.find((x) => x.name === c.mcpUpstream);
      if (u?.type !== "mcp") {
        ctx.addIssue({
          code: "custom",
          path: ["mcpUpstream"],
          message: `"${c.mcpUpstream}" is not a configured mcp upstream`,
        });
      }
    }
  });
/** What `SidecarConfigSchema` accepts (programmatic use, tests). */
export type SidecarConfigInput = z.input<typeof SidecarConfigSchema>;
/** The validated sidecar configuration. */
export type SidecarConfig = z.output<typeof SidecarConfigSchema>;

/** Invalid configuration; `issues` name the variables or keys. */
export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`Invalid sidecar configuration:\n  ${issues.join("\n  ")}`);
    this.name = "ConfigError";
  }
}

/** Environment variable of each config key (for error messages; `--help` names every one). */
export const ENV_OF: Record<string, string> = {
  serviceUrl: "TOLLGATE_SERVICE_URL",
  apiKeyFile: "TOLLGATE_API_KEY_FILE",
  serviceTokenFile: "TOLLGATE_SERVICE_TOKEN_FILE",
  organization: "TOLLGATE_ORGANIZATION",
  agentName: "TOLLGATE_AGENT_NAME",
  grpcAddress: "TOLLGATE_GRPC_ADDRESS",
  httpAddress: "TOLLGATE_HTTP_ADDRESS",
  probeAddress: "TOLLGATE_PROBE_ADDRESS",
  upstreams: "TOLLGATE_UPSTREAMS",
  failModes: "TOLLGATE_FAIL_MODES",
  mcpUpstream: "TOLLGATE_MCP_UPSTREAM",
  maxPayloadBytes: "TOLLGATE_MAX_PAYLOAD_BYTES",
  drainTimeoutMs: "TOLLGATE_DRAIN_TIMEOUT_MS",
  backendTimeoutSeconds: "TOLLGATE_BACKEND_TIMEOUT_SECONDS",
  approvalTimeoutHours: "TOLLGATE_APPROVAL_TIMEOUT_HOURS",
  servicePublicUrl: "TOLLGATE_SERVICE_PUBLIC_URL",
  reattachWindowSeconds: "TOLLGATE_REATTACH_WINDOW_SECONDS",
  mcpSessionIdleSeconds: "TOLLGATE_MCP_SESSION_IDLE_SECONDS",
  mcpProgressIntervalSeconds: "TOLLGATE_MCP_PROGRESS_INTERVAL_SECONDS",
  mcpAllowedOrigins: "TOLLGATE_MCP_ALLOWED_ORIGINS",
  credentialsDir: "TOLLGATE_CREDENTIALS_DIR",
  logLevel: "LOG_LEVEL",
};

/** Every environment variable of the configuration (for `--help` and its test). */
export const CONFIG_ENVIRONMENT: readonly string[] = [
  ...Object.values(ENV_OF),
  "TOLLGATE_UPSTREAMS_FILE",
  "TOLLGATE_CONFIG_FILE",
];

const issuesOf = (error: z.ZodError, first: (segment: string) => string): string[] =>
  issueLines(error, { root: "(config)", first });

async function readStructured(file: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new ConfigError([
      `${what}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`,
    ]);
  }
  try {
    return parseYaml(text); // YAML is a superset of JSON
  } catch (err) {
    throw new ConfigError([
      `${what}: ${file} is not valid YAML or JSON (${(err as Error).message.split("\n")[0]})`,
    ]);
  }
}

function parseJsonEnv(env: NodeJS.ProcessEnv, key: string): unknown {
  const raw = env[key];
  if (raw === undefined || raw.trim() === "") return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw new ConfigError([`${key}: must be JSON`]);
  }
}

const numberEnv = (env: NodeJS.ProcessEnv, key: string): number | undefined => {
  const raw = env[key];
  if (raw === undefined || raw.trim() === "") return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new ConfigError([`${key}: must be a number`]);
  return n;
};

/**
 * Builds the configuration from the environment over the optional file (`configFile`, else
 * TOLLGATE_CONFIG_FILE).
 * @throws ConfigError naming every invalid variable or key.
 */
export async function loadConfig(env: NodeJS.ProcessEnv, configFile?: string): Promise<SidecarConfig> {
  const filePath = configFile ?? env.TOLLGATE_CONFIG_FILE;
  let file: z.infer<typeof FileSchema> = {};
  if (filePath) {
    const parsed = FileSchema.safeParse((await readStructured(filePath, "TOLLGATE_CONFIG_FILE")) ?? {});
    if (!parsed.success) throw new ConfigError(issuesOf(parsed.error, (k) => `${filePath}: ${k}`));
    file = parsed.data;
  }
  let upstreams: unknown = parseJsonEnv(env, "TOLLGATE_UPSTREAMS");
  if (upstreams === undefined && env.TOLLGATE_UPSTREAMS_FILE) {
    const doc = await readStructured(env.TOLLGATE_UPSTREAMS_FILE, "TOLLGATE_UPSTREAMS_FILE");
    upstreams = Array.isArray(doc) ? doc : (doc as { upstreams?: unknown } | null)?.upstreams;
    if (!Array.isArray(upstreams)) {
      throw new ConfigError([
        `TOLLGATE_UPSTREAMS_FILE: ${env.TOLLGATE_UPSTREAMS_FILE} must hold a list or { upstreams: [...] }`,
      ]);
    }
  }
  const pick = <T>(fromEnv: T | undefined, fromFile: T | undefined): T | undefined => fromEnv ?? fromFile;
  const str = (key: string) => (env[key]?.trim() ? env[key]!.trim() : undefined);
  const candidate = {
    serviceUrl: pick(str("TOLLGATE_SERVICE_URL"), file.service_url),
    apiKeyFile: pick(str("TOLLGATE_API_KEY_FILE"), file.api_key_file),
    serviceTokenFile: pick(str("TOLLGATE_SERVICE_TOKEN_FILE"), file.service_token_file),
    organization: pick(str("TOLLGATE_ORGANIZATION"), file.organization),
    agentName: pick(str("TOLLGATE_AGENT_NAME"), file.agent_name),
    grpcAddress: pick(str("TOLLGATE_GRPC_ADDRESS"), file.grpc_address),
    httpAddress: pick(str("TOLLGATE_HTTP_ADDRESS"), file.http_address),
    probeAddress: pick(str("TOLLGATE_PROBE_ADDRESS"), file.probe_address),
    upstreams: pick(upstreams, file.upstreams),
    failModes: pick(parseJsonEnv(env, "TOLLGATE_FAIL_MODES"), file.fail_modes),
    mcpUpstream: pick(str("TOLLGATE_MCP_UPSTREAM"), file.mcp_upstream),
    maxPayloadBytes: pick(numberEnv(env, "TOLLGATE_MAX_PAYLOAD_BYTES"), file.max_payload_bytes),
    drainTimeoutMs: pick(numberEnv(env, "TOLLGATE_DRAIN_TIMEOUT_MS"), file.drain_timeout_ms),
    backendTimeoutSeconds: pick(
      numberEnv(env, "TOLLGATE_BACKEND_TIMEOUT_SECONDS"),
      file.backend_timeout_seconds,
    ),
    approvalTimeoutHours: pick(
      numberEnv(env, "TOLLGATE_APPROVAL_TIMEOUT_HOURS"),
      file.approval_timeout_hours,
    ),
    servicePublicUrl: pick(str("TOLLGATE_SERVICE_PUBLIC_URL"), file.service_public_url),
    reattachWindowSeconds: pick(
      numberEnv(env, "TOLLGATE_REATTACH_WINDOW_SECONDS"),
      file.reattach_window_seconds,
    ),
    mcpSessionIdleSeconds: pick(
      numberEnv(env, "TOLLGATE_MCP_SESSION_IDLE_SECONDS"),
      file.mcp_session_idle_seconds,
    ),
    mcpProgressIntervalSeconds: pick(
      numberEnv(env, "TOLLGATE_MCP_PROGRESS_INTERVAL_SECONDS"),
      file.mcp_progress_interval_seconds,
    ),
    mcpAllowedOrigins: pick(
      str("TOLLGATE_MCP_ALLOWED_ORIGINS")
        ?.split(",")
        .filter((o) => o.trim() !== ""),
      file.mcp_allowed_origins,
    ),
    credentialsDir: pick(str("TOLLGATE_CREDENTIALS_DIR"), file.credentials_dir),
    logLevel: pick(str("LOG_LEVEL"), file.log_level),
  };
  const defined = Object.fromEntries(Object.entries(candidate).filter(([, v]) => v !== undefined));
  return parseConfig(defined);
}

/**
 * Validates a programmatic configuration (tests, embedding).
 * @throws ConfigError naming the variable of each invalid key.
 */
export function parseConfig(input: SidecarConfigInput | Record<string, unknown>): SidecarConfig {
  const parsed = SidecarConfigSchema.safeParse(input);
  if (!parsed.success) throw new ConfigError(issuesOf(parsed.error, (k) => ENV_OF[k] ?? k));
  return parsed.data;
}

/**
 * Reads one secret from a mounted file (trailing whitespace trimmed) and checks its shape. The
 * secret itself never appears in an error.
 * @param variable the setting that names the file, for the error (e.g. TOLLGATE_API_KEY_FILE).
 * @param valid whether the trimmed text is one secret of the expected kind; `what` names it.
 * @throws ConfigError naming `variable` when the file is missing, unreadable or not one secret.
 */
export async function readSecretFile(
  file: string,
  variable: string,
  what: string,
  valid: (text: string) => boolean,
): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new ConfigError([
      `${variable}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"})`,
    ]);
  }
  const secret = text.trim();
  if (!valid(secret)) throw new ConfigError([`${variable}: ${file} must hold exactly one ${what}`]);
  return secret;
}

/**
 * Reads the API key from its file.
 * @throws ConfigError when the file is missing, unreadable or does not hold one key.
 */
export const readApiKey = (file: string): Promise<string> =>
  readSecretFile(file, "TOLLGATE_API_KEY_FILE", "API key", (key) => key !== "" && !/\s/.test(key));

/** The configuration for logs and `--print-config`: no secrets (upstreams: describeUpstream). */
export function describeConfig(c: SidecarConfig): Record<string, unknown> {
  return { ...c, upstreams: c.upstreams.map(describeUpstream) };
}
