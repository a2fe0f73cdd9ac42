/**
 * Entry point of the sidecar: `tsx sidecar/main.ts [--config file]`. Reads the configuration
 * (environment over the optional file) and the API key from its mounted file, starts the gRPC
 * server and the HTTP face, and drains gracefully on SIGTERM/SIGINT.
 * Exit codes: 0 after a drain, 2 for invalid configuration, 1 for anything else.
 */
import { Command, CommanderError } from "commander";
import { startTracing, TelemetryConfigError } from "../src/telemetry/tracing.js";
import { VERSION } from "../src/version.js";
import { ConfigError, describeConfig, loadConfig, readApiKey } from "./config.js";
import { createLogger } from "./logger.js";
import { type ServiceToken, watchServiceToken } from "./service-token.js";
import { startSidecar } from "./sidecar.js";

const ENVIRONMENT_HELP = `
Environment (injected by the Tollgate admission webhook):
  TOLLGATE_SERVICE_URL            governance service base URL (required)
  TOLLGATE_SERVICE_TOKEN_FILE     the pod's projected service account token (audience tollgate); when set,
                                  the sidecar authenticates with it (verified workload identity), re-read as
                                  the kubelet rotates it; the admission webhook sets it
  TOLLGATE_SERVICE_PUBLIC_URL     the service's URL as people open it, for review links (default
                                  TOLLGATE_SERVICE_URL)
  TOLLGATE_API_KEY_FILE           file holding the client API key (default /var/run/tollgate/api-key);
                                  the key is never taken from a flag or an environment value
  TOLLGATE_ORGANIZATION           organization slug (informational)
  TOLLGATE_AGENT_NAME             agent name of calls through the MCP face (default mcp-agent)
  TOLLGATE_GRPC_ADDRESS           gRPC listen address (default 127.0.0.1:50051)
  TOLLGATE_HTTP_ADDRESS           /healthz /readyz /metrics /mcp listen address (default 127.0.0.1:9090)
  TOLLGATE_PROBE_ADDRESS          second listener with only /healthz /readyz /metrics, for kubelet
                                  probes and scrapers (off by default; the webhook sets 0.0.0.0:9091)
  TOLLGATE_UPSTREAMS              JSON list of upstreams, e.g.
                                  [{"name":"search","type":"http","url":"http://127.0.0.1:8080/search"},
                                   {"name":"memory","type":"mcp","transport":"stdio","command":"npx","args":["mcp-server-memory"]}]
                                  an http or streamable_http upstream may name a Secret with its
                                  credentials (never a value), e.g.
                                  "credentials":{"secretName":"payments-credentials","type":"bearer"}
                                  types: bearer, headers, oauth2_client_credentials,
                                  token_exchange (docs/tool-credentials.md)
  TOLLGATE_UPSTREAMS_FILE         YAML/JSON file with the upstream list (used when TOLLGATE_UPSTREAMS is unset)
  TOLLGATE_CREDENTIALS_DIR        where each upstream's credentials Secret is mounted, as
                                  <dir>/<upstream name>/<key> (default /var/run/tollgate/credentials)
  TOLLGATE_FAIL_MODES             JSON map action category -> deny|allow when the service is unreachable
  TOLLGATE_MCP_UPSTREAM           name of the mcp upstream mirrored at /mcp
  TOLLGATE_MCP_SESSION_IDLE_SECONDS an MCP session idle this long expires, its chain completed
                                  (default 1800)
  TOLLGATE_MCP_PROGRESS_INTERVAL_SECONDS notifications/progress interval while a call waits
                                  (default 10, at most 15)
  TOLLGATE_MCP_ALLOWED_ORIGINS    comma-separated Origins allowed on /mcp (an entry without a port
                                  allows every port; default localhost, 127.0.0.1, [::1]);
                                  requests without Origin pass
  TOLLGATE_MAX_PAYLOAD_BYTES      largest Invoke payload as JSON (default 262144)
  TOLLGATE_DRAIN_TIMEOUT_MS       grace for in-flight calls on SIGTERM (default 25000)
  TOLLGATE_BACKEND_TIMEOUT_SECONDS per-request timeout to the service (default 5)
  TOLLGATE_APPROVAL_TIMEOUT_HOURS local approval wait window (default 24)
  TOLLGATE_REATTACH_WINDOW_SECONDS how long the outcome of a call whose caller left is kept for its
                                  retry, from the approval's resolution (default 600)
  TOLLGATE_CONFIG_FILE            YAML/JSON file with the same settings in snake_case (also --config)
  LOG_LEVEL                       fatal|error|warn|info|debug|trace|silent (default info)
  OTEL_EXPORTER_OTLP_ENDPOINT     OpenTelemetry collector (OTLP); tracing is off when unset. Also
                                  OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER,
                                  OTEL_SDK_DISABLED and the other standard OTEL_* variables
`;

async function main(): Promise<void> {
  const program = new Command("tollgate-sidecar")
    .description(
      "Tollgate sidecar: governs an agent's tool calls through the governance service (gRPC tollgate.v1.ToolGateway)",
    )
    .version(VERSION)
    .option("-c, --config <file>", "YAML or JSON configuration file (environment variables win)")
    .option("--print-config", "print the validated configuration (no secrets) and exit")
    .addHelpText("after", ENVIRONMENT_HELP)
    .exitOverride();
  try {
    program.parse(process.argv);
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode);
    throw err;
  }
  const flags = program.opts<{ config?: string; printConfig?: boolean }>();

  let config: Awaited<ReturnType<typeof loadConfig>>;
  let apiKeyFromFile: string | null = null;
  try {
    config = await loadConfig(process.env, flags.config);
    if (flags.printConfig) {
      process.stdout.write(`${JSON.stringify(describeConfig(config), null, 2)}\n`);
      return;
    }
    if (config.serviceTokenFile === null) apiKeyFromFile = await readApiKey(config.apiKeyFile);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }

  const log = createLogger(config.logLevel);
  log.info({ config: describeConfig(config) }, "starting Tollgate sidecar");
  const tracing = await startTracing({ serviceName: "tollgate-sidecar", log }).catch((err: unknown) => {
    if (!(err instanceof TelemetryConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  });
  let token: ServiceToken | null = null;
  try {
    if (config.serviceTokenFile !== null) token = await watchServiceToken(config.serviceTokenFile, log);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // A workload token is read again on every request (the kubelet rotates it); an API key is fixed.
  const apiKey = token ? token.current : (apiKeyFromFile as string);
  const sidecar = await startSidecar({ config, apiKey, log });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    const force = setTimeout(() => {
      log.error("shutdown did not finish in time; exiting");
      process.exit(1);
    }, config.drainTimeoutMs + 10_000);
    force.unref();
    sidecar.drain().then(
      () => tracing.shutdown().then(() => process.exit(0)),
      (err: unknown) => {
        log.error({ err }, "drain failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

main().catch((err) => {
  process.stderr.write(`tollgate-sidecar: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
