/**
 * A lean HTTP/1.1 load client for benchmarks: node:http over a keep-alive agent. The global
 * fetch (undici) spent most of a 2-core machine on its own per-request machinery: against a
 * bare Fastify hello-world it drove 2.1k req/s where node:http drives 15.9k, so a fetch-based
 * load generator measured itself rather than the server.
 */
import http from "node:http";

/** One response: status code and body text. */
export interface BenchResponse {
  status: number;
  body: string;
}

/** A keep-alive client bound to one origin (`http://host:port`), at most `sockets` connections. */
export function benchClient(origin: string, sockets: number) {
  const url = new URL(origin);
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  return {
    /** Sends one request; `body` is sent as JSON when given. Rejects on network errors. */
    request(
      method: string,
      path: string,
      headers: Record<string, string>,
      body?: string,
    ): Promise<BenchResponse> {
      return new Promise((resolve, reject) => {
        const h: Record<string, string | number> = { ...headers };
        if (body !== undefined) {
          h["content-type"] = "application/json";
          h["content-length"] = Buffer.byteLength(body);
        }
        const req = http.request(
          { host: url.hostname, port: url.port, path, method, agent, headers: h },
          (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (c: string) => (text += c));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
            res.on("error", reject);
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    },
    /** Closes the keep-alive sockets. */
    close(): void {
      agent.destroy();
    },
  };
}
