/**
 * The parts bench/sidecar-overhead runs besides the service and the tool (bench/lib):
 * the direct call to the tool, the sidecar as its own process, and metrics reads.
 */

import http from "node:http";
import { type SidecarProcess, startSidecarProcess as startSidecar } from "../lib/sidecar-process.js";

/**
 * One direct call: the same request the sidecar's http upstream makes (a JSON POST); resolves
 * with the response text.
 * @throws Error when the answer is not 200 or not JSON, or on a network error.
 */
export function directCall(url: URL, agent: http.Agent, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          accept: "application/json",
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          if (res.statusCode !== 200) return reject(new Error(`upstream answered ${res.statusCode}`));
          const text = Buffer.concat(chunks).toString("utf8");
          JSON.parse(text);
          resolve(text);
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

export type { SidecarProcess } from "../lib/sidecar-process.js";

/**
 * The sidecar as its own process (`node --import tsx sidecar/main.ts` in `root`, default this
 * checkout; with --cpu-prof into `profileDir` when given) with the local tool as its one http
 * upstream, named "tool"; resolves when /readyz answers.
 */
export function startSidecarProcess(opts: {
  serviceUrl: string;
  apiKey: string;
  upstreamUrl: string;
  profileDir: string | null;
  /** The built sidecar.js to run (npm run build); without it, the sources through tsx. */
  bundle?: string;
  root?: string;
}): Promise<SidecarProcess> {
  return startSidecar({
    serviceUrl: opts.serviceUrl,
    apiKey: opts.apiKey,
    upstreams: [{ name: "tool", type: "http", url: opts.upstreamUrl }],
    nodeArgs: opts.profileDir ? ["--cpu-prof", `--cpu-prof-dir=${opts.profileDir}`] : [],
    ...(opts.bundle && { entry: [opts.bundle] }),
    ...(opts.root && { root: opts.root }),
  });
}

/**
 * GET `url` on a connection of its own (no keep-alive: an idle pooled socket may be one the
 * server has just closed) and returns the body.
 * @throws Error on a network error or a non-2xx answer.
 */
export function getText(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () =>
          (res.statusCode ?? 0) < 300 ? resolve(text) : reject(new Error(`GET ${url} → ${res.statusCode}`)),
        );
      })
      .on("error", reject);
  });
}

/** Mean of a Prometheus histogram (`name`_sum / `name`_count, all label sets) in ms. */
export function meanMs(metrics: string, name: string): number {
  const sum = (suffix: string) =>
    metrics
      .split("\n")
      .filter((l) => l.startsWith(`${name}_${suffix}`))
      .reduce((acc, l) => acc + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  const count = sum("count");
  return count === 0 ? Number.NaN : (sum("sum") / count) * 1000;
}
