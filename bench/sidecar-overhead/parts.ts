/**
 * The parts bench/sidecar-overhead runs besides the service and the tool (bench/lib):
 * the sidecar as its own process, the Go relay floor's binary, and metrics reads.
 */

import { execFileSync } from "node:child_process";
import http from "node:http";
import path from "node:path";
import { repoRoot } from "../lib/parts.js";
import { type SidecarProcess, startSidecarProcess as startSidecar } from "../lib/sidecar-process.js";

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
 * Path of the Go relay floor's binary (go-relay/, built by scripts/build-go-relay.sh into a
 * cache outside the repository, keyed by a hash of its sources and the Go version). Under
 * CI=true .ci/run has built it, and a missing one is an error rather than a build; elsewhere
 * it is built on demand (Go and the module proxy needed, ~20 s the first time).
 * @throws Error when the binary is missing under CI, or the build fails.
 */
export function goRelayBinary(): string {
  const script = path.join(repoRoot, "scripts/build-go-relay.sh");
  const out = execFileSync("bash", [script, ...(process.env.CI === "true" ? ["--no-build"] : [])], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return out.trim().split("\n").at(-1)!;
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
