/**
 * Assembles and runs the sidecar: SDK configuration, upstreams, the Governor, the gRPC server
 * (ToolGateway, health, reflection), the HTTP face (health, metrics, MCP), and graceful drain.
 *
 * Drain (SIGTERM): health turns NOT_SERVING and /readyz 503; the gRPC server refuses new calls;
 * calls in flight get `drainTimeoutMs` to finish, after which they fail cleanly with
 * UNAVAILABLE SHUTTING_DOWN (waits stop, nothing more is forwarded); then MCP sessions close
 * (their chains are completed), outcome reports still in flight are awaited (at most one
 * backend timeout), and the HTTP face and the upstreams close.
 */
import type http from "node:http";
import type * as grpc from "@grpc/grpc-js";
import type { HealthImplementation } from "grpc-health-check";
import { createConfig, type SdkInternals } from "../src/sdk/index.js";
import type { SidecarConfig } from "./config.js";
import { Governor } from "./core/governor.js";
import { bindGrpc, createGrpcServer } from "./faces/grpc/server.js";
import { createHttpServer, listenHttp, type Readiness } from "./faces/http/server.js";
import { createLogger, type Logger } from "./logger.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { createServiceFetch } from "./service-fetch.js";
import { createUpstreams, type Upstream } from "./upstreams/index.js";
import { SERVICE_NAME } from "./wire/proto.js";

/** Options of startSidecar. */
export interface StartOptions {
  config: SidecarConfig;
  /**
   * The client API key (read from TOLLGATE_API_KEY_FILE by main.ts), or a function returning the
   * pod's current service account token (TOLLGATE_SERVICE_TOKEN_FILE). A secret.
   */
  apiKey: string | (() => string);
  log?: Logger;
  /** SDK hooks (tests: a shorter approval poll interval). */
  sdkInternals?: Partial<SdkInternals>;
  /** Collect process metrics (default true). */
  defaultMetrics?: boolean;
}

/** A running sidecar. */
export interface Sidecar {
  /** Bound gRPC port. */
  grpcPort: number;
  /** Bound HTTP port. */
  httpPort: number;
  /** Bound port of the probe face (TOLLGATE_PROBE_ADDRESS), or null when it is off. */
  probePort: number | null;
  /** host:port of the gRPC server. */
  grpcAddress: string;
  /** Base URL of the HTTP face, e.g. http://127.0.0.1:9090. */
  httpUrl: string;
  governor: Governor;
  metrics: Metrics;
  upstreams: ReadonlyMap<string, Upstream>;
  readiness(): Readiness;
  /** Graceful drain then close (see the module comment). Idempotent. */
  drain(timeoutMs?: number): Promise<void>;
  /** Drain with no grace: in-flight calls fail at once. */
  close(): Promise<void>;
}

const hostOf = (address: string) => address.slice(0, address.lastIndexOf(":"));

/** Starts the sidecar; resolves once both servers listen. */
export async function startSidecar(opts: StartOptions): Promise<Sidecar> {
  const { config } = opts;
  const log = opts.log ?? createLogger(config.logLevel);
  const sdkConfig = createConfig(
    opts.apiKey,
    {
      backendUrl: config.serviceUrl,
      backendTimeoutSeconds: config.backendTimeoutSeconds,
      defaultApprovalTimeoutHours: config.approvalTimeoutHours,
      ...(config.failModes && { failModes: config.failModes }),
    },
    { fetch: createServiceFetch(), ...opts.sdkInternals },
  );
  const metrics = createMetrics({ defaultMetrics: opts.defaultMetrics });
  const upstreams = await createUpstreams(config.upstreams, log, {
    credentialsDir: config.credentialsDir,
    serviceTokenFile: config.serviceTokenFile,
  });
  await Promise.all(
    [...upstreams.values()].map((u) =>
      u
        .start()
        .catch((err: Error) =>
          log.warn({ upstream: u.name, err: err.message }, "upstream not reachable yet"),
        ),
    ),
  );
  const reconnect = setInterval(() => {
    for (const u of upstreams.values()) if (!u.ready()) u.start().catch(() => undefined);
  }, 5000);
  reconnect.unref();

  const publicUrl = (config.servicePublicUrl ?? config.serviceUrl).replace(/\/$/, "");
  const governor = new Governor({
    sdkConfig,
    upstreams,
    metrics,
    log,
    approvals: {
      reviewUrl: (approvalId) => `${publicUrl}/dashboard/approvals#approval-${approvalId}`,
      reattachWindowMs: config.reattachWindowSeconds * 1000,
    },
  });
  const { server: grpcServer, health } = createGrpcServer({
    governor,
    upstreamNames: new Set(upstreams.keys()),
    maxPayloadBytes: config.maxPayloadBytes,
    log,
  });
  const mcpUpstream = config.mcpUpstream ? upstreams.get(config.mcpUpstream) : undefined;
  // Loaded only for an MCP upstream, as the MCP SDK it needs (see createUpstreams).
  const mcp = mcpUpstream
    ? await import("./faces/mcp/server.js").then(
        ({ McpFace }) =>
          new McpFace({
            governor,
            upstream: mcpUpstream as import("./upstreams/mcp.js").McpUpstream,
            agentName: config.agentName,
            maxPayloadBytes: config.maxPayloadBytes,
            log,
            metrics,
            sessionIdleMs: config.mcpSessionIdleSeconds * 1000,
            progressIntervalMs: config.mcpProgressIntervalSeconds * 1000,
            allowedOrigins: config.mcpAllowedOrigins,
            taskTtlMs: (config.approvalTimeoutHours * 3600 + config.reattachWindowSeconds) * 1000,
            stateSecret: typeof opts.apiKey === "string" ? opts.apiKey : null,
          }),
      )
    : null;

  let draining = false;
  const readiness = (): Readiness => {
    const reasons = [
      ...(draining ? ["draining"] : []),
      ...[...upstreams.values()].filter((u) => !u.ready()).map((u) => `upstream ${u.name} not connected`),
    ];
    return { ready: reasons.length === 0, reasons };
  };
  const httpServer = createHttpServer({ metrics, readiness, mcp, log });

  const grpcPort = await bindGrpc(grpcServer, config.grpcAddress);
  const httpPort = await listenHttp(httpServer, config.httpAddress);
  // Last: once the probe face answers, gRPC and the HTTP face accept connections.
  const probeServer = config.probeAddress
    ? createHttpServer({ metrics, readiness, mcp: null, log, probeOnly: true })
    : null;
  const probePort =
    probeServer && config.probeAddress ? await listenHttp(probeServer, config.probeAddress) : null;
  setServing(health, true);
  log.info(
    {
      grpc: `${hostOf(config.grpcAddress)}:${grpcPort}`,
      http: `${hostOf(config.httpAddress)}:${httpPort}`,
      ...(probePort !== null && config.probeAddress
        ? { probe: `${hostOf(config.probeAddress)}:${probePort}` }
        : {}),
      organization: config.organization,
    },
    "Tollgate sidecar listening",
  );

  let drained: Promise<void> | null = null;
  const drain = (timeoutMs = config.drainTimeoutMs) => {
    drained ??= (async () => {
      draining = true;
      setServing(health, false);
      log.info({ inflight: governor.inflight, timeoutMs }, "draining");
      const refused = tryShutdown(grpcServer);
      const finished = await Promise.race([
        governor.idle().then(() => true),
        sleep(timeoutMs).then(() => false),
      ]);
      if (!finished) {
        log.warn({ inflight: governor.inflight }, "drain timeout: failing the calls still in flight");
        governor.abortInflight();
        await Promise.race([governor.idle(), sleep(2000)]);
      }
      governor.withdrawDetachedWaits();
      await Promise.race([refused, sleep(1000)]);
      await Promise.race([governor.reportsSettled(), sleep(config.backendTimeoutSeconds * 1000)]);
      grpcServer.forceShutdown();
      clearInterval(reconnect);
      await mcp?.close();
      await closeHttp(httpServer);
      if (probeServer) await closeHttp(probeServer);
      await Promise.allSettled([...upstreams.values()].map((u) => u.close()));
      log.info("sidecar stopped");
    })();
    return drained;
  };

  return {
    grpcPort,
    httpPort,
    probePort,
    grpcAddress: `${hostOf(config.grpcAddress)}:${grpcPort}`,
    httpUrl: `http://${hostOf(config.httpAddress)}:${httpPort}`,
    governor,
    metrics,
    upstreams,
    readiness,
    drain,
    close: () => drain(0),
  };
}

function setServing(health: HealthImplementation, serving: boolean): void {
  const status = serving ? "SERVING" : "NOT_SERVING";
  health.setStatus("", status);
  health.setStatus(SERVICE_NAME, status);
}

function tryShutdown(server: grpc.Server): Promise<void> {
  return new Promise((resolve) => server.tryShutdown(() => resolve()));
}

async function closeHttp(server: http.Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await Promise.race([closed, sleep(1000)]);
  server.closeAllConnections();
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref?.());
