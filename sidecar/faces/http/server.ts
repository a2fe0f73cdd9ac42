/**
 * The sidecar's HTTP face on TOLLGATE_HTTP_ADDRESS: GET /healthz (alive), GET /readyz (ready to
 * take calls: listening, not draining, every mcp upstream connected), GET /metrics
 * (Prometheus), and /mcp (the MCP face, when TOLLGATE_MCP_UPSTREAM is set).
 *
 * The face listens on loopback by default: /mcp makes governed tool calls with the pod's API
 * key, so it must not be reachable from other pods. Kubelet probes and Prometheus scrapers
 * connect to the pod IP, so the sidecar can also serve a probe face (TOLLGATE_PROBE_ADDRESS,
 * 0.0.0.0:9091 when injected): the same /healthz, /readyz and /metrics, and never /mcp.
 */
import http from "node:http";
import type { Logger } from "../../logger.js";
import type { Metrics } from "../../metrics.js";

/** What /readyz reports. */
export interface Readiness {
  ready: boolean;
  /** Why not, e.g. "draining" or "upstream memory not connected". */
  reasons: string[];
}

/**
 * What serves /mcp (the MCP face, faces/mcp): given here as a shape so that the HTTP face does
 * not import another face.
 */
export interface McpEndpoint {
  handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void>;
}

/** Options of the HTTP face. */
export interface HttpFaceOptions {
  metrics: Metrics;
  readiness: () => Readiness;
  mcp: McpEndpoint | null;
  log: Logger;
  /** The probe face: /healthz, /readyz, /metrics only (/mcp answers 404 even with an MCP face). */
  probeOnly?: boolean;
}

/** Creates the HTTP server (not yet listening). */
export function createHttpServer(o: HttpFaceOptions): http.Server {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    handle(o, path ?? "/", req, res).catch((err: unknown) => {
      o.log.error({ err, path }, "HTTP handler failed");
      if (!res.headersSent) json(res, 500, { status: "error" });
      else res.destroy();
    });
  });
  server.requestTimeout = 0; // MCP streams may stay open; handlers bound their own work
  server.keepAliveTimeout = 65_000;
  return server;
}

async function handle(o: HttpFaceOptions, path: string, req: http.IncomingMessage, res: http.ServerResponse) {
  if (path === "/mcp") {
    if (o.probeOnly) return json(res, 404, { status: "not_found" });
    if (!o.mcp)
      return json(res, 404, {
        status: "not_found",
        message: "the MCP face is off (set TOLLGATE_MCP_UPSTREAM)",
      });
    return o.mcp.handle(req, res);
  }
  if (req.method !== "GET") return json(res, 405, { status: "method_not_allowed" });
  if (path === "/healthz") return json(res, 200, { status: "ok" });
  if (path === "/readyz") {
    const r = o.readiness();
    return json(
      res,
      r.ready ? 200 : 503,
      r.ready ? { status: "ready" } : { status: "not_ready", reasons: r.reasons },
    );
  }
  if (path === "/metrics") {
    const text = await o.metrics.registry.metrics();
    res.writeHead(200, { "content-type": o.metrics.registry.contentType });
    return res.end(text);
  }
  return json(res, 404, { status: "not_found" });
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** Starts listening on host:port (port 0 picks one); resolves to the bound port. */
export function listenHttp(server: http.Server, address: string): Promise<number> {
  const i = address.lastIndexOf(":");
  const host = address.slice(0, i).replace(/^\[|\]$/g, "");
  const port = Number(address.slice(i + 1));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve((server.address() as { port: number }).port);
    });
  });
}
