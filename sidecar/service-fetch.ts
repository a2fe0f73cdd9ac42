/**
 * The HTTP transport the sidecar hands to the SDK (SdkInternals.fetch) for its calls to the
 * governance service: node:http(s) over a keep-alive agent instead of the global fetch
 * (undici). Profiling the allow path showed the global fetch's per-request machinery (web
 * streams, Request/Response objects, abort-signal plumbing) as the sidecar's largest CPU cost
 * after the kernel; this transport does the same request with a fraction of it.
 *
 * It implements the part of fetch the SDK uses (src/sdk/http.ts requestJson): `init.method`,
 * `init.headers` (a plain object), `init.body` (a string), `init.signal`; the result has
 * `status`, `ok`, `headers.get()`, `text()` and `json()`. A network error or an abort rejects,
 * as fetch does (the SDK maps both itself).
 */
import http from "node:http";
import https from "node:https";
import { urlToHttpOptions } from "node:url";

/** Idle keep-alive sockets are dropped after this long: below the service's 72 s keep-alive. */
const FREE_SOCKET_TIMEOUT_MS = 30_000;

/** The subset of Response the SDK reads. */
class ServiceResponse {
  readonly ok: boolean;
  constructor(
    readonly status: number,
    private readonly raw: http.IncomingHttpHeaders,
    private readonly body: string,
  ) {
    this.ok = status >= 200 && status < 300;
  }
  get headers(): { get(name: string): string | null } {
    const raw = this.raw;
    return {
      get: (name) => {
        const v = raw[name.toLowerCase()];
        return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
      },
    };
  }
  async text(): Promise<string> {
    return this.body;
  }
  async json(): Promise<unknown> {
    return JSON.parse(this.body);
  }
}

/** Creates a fetch-compatible function over keep-alive agents (one for http, one for https). */
export function createServiceFetch(): typeof fetch {
  const agents = {
    "http:": new http.Agent({ keepAlive: true, maxSockets: 64, timeout: FREE_SOCKET_TIMEOUT_MS }),
    "https:": new https.Agent({ keepAlive: true, maxSockets: 64, timeout: FREE_SOCKET_TIMEOUT_MS }),
  };
  // Request options per origin, parsed once: the SDK calls `${baseUrl}${path}`, always the same
  // origin, so parsing each URL again only cost CPU on the hot path.
  const origins = new Map<string, Origin>();
  const originOf = (origin: string): Origin => {
    let o = origins.get(origin);
    if (!o) {
      const { protocol, hostname, port } = urlToHttpOptions(new URL(origin));
      const secure = protocol === "https:";
      o = {
        request: secure ? https.request : http.request,
        options: { protocol, hostname, port, agent: agents[secure ? "https:" : "http:"] },
      };
      origins.set(origin, o);
    }
    return o;
  };
  const serviceFetch = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> =>
    new Promise((resolve, reject) => {
      const signal = init.signal ?? null;
      if (signal?.aborted) return reject(signal.reason);
      const href = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      const slash = href.indexOf("/", href.indexOf("//") + 2);
      const { request, options } = originOf(slash < 0 ? href : href.slice(0, slash));
      const body = typeof init.body === "string" ? init.body : undefined;
      const headers = { ...(init.headers as Record<string, string> | undefined) };
      if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
      // The signal is handled here with one listener rather than passed to http.request, whose
      // stream plumbing for it (end-of-stream watchers) cost more than the rest of the request.
      const onAbort = () => req.destroy(signal!.reason);
      const fail = (err: unknown) => {
        signal?.removeEventListener("abort", onAbort);
        reject(err);
      };
      const req = request(
        // Spread last: properties written after a spread cost ~1 µs each on Node 20.
        { path: slash < 0 ? "/" : href.slice(slash), method: init.method ?? "GET", headers, ...options },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", fail);
          res.on("end", () => {
            signal?.removeEventListener("abort", onAbort);
            resolve(
              new ServiceResponse(
                res.statusCode ?? 0,
                res.headers,
                Buffer.concat(chunks).toString("utf8"),
              ) as unknown as Response,
            );
          });
        },
      );
      req.on("error", fail);
      signal?.addEventListener("abort", onAbort, { once: true });
      req.end(body);
    });
  return serviceFetch as typeof fetch;
}

/** How to reach one origin. */
interface Origin {
  request: typeof http.request;
  options: http.RequestOptions;
}
