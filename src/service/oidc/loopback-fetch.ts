/**
 * DEVELOPMENT ONLY: lets the dashboard's OIDC client reach the embedded development provider
 * of the same process over loopback, whatever TOLLGATE_PUBLIC_URL says (behind a port-forward
 * or an ingress the public URL is often unreachable from inside the pod). Requests to the
 * public origin go to the local listening socket with the public Host and X-Forwarded-Proto,
 * so the provider still builds its URLs from the public URL. Other URLs use the global fetch.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

type FetchLike = (
  url: string,
  options: { method?: string; headers?: unknown; body?: unknown },
) => Promise<Response>;

/** A fetch for openid-client that routes `publicUrl` requests to `address()`. */
export function loopbackFetch(publicUrl: string, address: () => AddressInfo | string | null): FetchLike {
  const pub = new URL(publicUrl);
  return async (url, options) => {
    const target = new URL(url);
    const local = address();
    if (target.origin !== pub.origin || !local || typeof local === "string") {
      return fetch(url, options as RequestInit);
    }
    const host = local.address === "0.0.0.0" || local.address === "::" ? "127.0.0.1" : local.address;
    const headers: Record<string, string> = {};
    new Headers(options.headers as HeadersInit | undefined).forEach((v, k) => {
      headers[k] = v;
    });
    headers.host = pub.host;
    headers["x-forwarded-proto"] = pub.protocol.replace(":", "");
    const body =
      typeof options.body === "string"
        ? options.body
        : options.body instanceof URLSearchParams
          ? options.body.toString()
          : undefined;
    if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
    return new Promise<Response>((resolve, reject) => {
      const req = http.request(
        {
          host,
          port: local.port,
          path: `${target.pathname}${target.search}`,
          method: options.method ?? "GET",
          headers,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers)) {
              if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(", ") : v);
            }
            const status = res.statusCode ?? 500;
            const empty = [101, 204, 205, 304].includes(status);
            resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers: h }));
          });
          res.on("error", reject);
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error("development provider request timed out")));
      req.on("error", reject);
      req.end(body);
    });
  };
}
