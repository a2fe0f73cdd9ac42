/**
 * A lean client of the kind cluster's API server from its kubeconfig (the admin client
 * certificate kind writes): the keep-alive {@link ApiClient} of bench/lib/kube.ts, plus a watch
 * stream. Timing pod creation through kubectl would add a process
 * start to every figure; this adds one TLS request.
 */

import { readFileSync } from "node:fs";
import https from "node:https";
import { createInterface } from "node:readline";
import YAML from "yaml";
import { type ApiClient, tlsApiClient } from "../lib/kube.js";

/** One watch event of the API server. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  // biome-ignore lint/suspicious/noExplicitAny: API objects of many kinds
  object: any;
}

/** A client of one context's cluster, with at most `sockets` keep-alive connections. */
export interface KubeApi extends ApiClient {
  /**
   * Streams the events of a watch URL to `onEvent` until `stop()`: `started` resolves once the API
   * server answered (events from then on are delivered), `ended` when the stream ends.
   */
  watch(
    path: string,
    onEvent: (e: WatchEvent) => void,
  ): { stop(): void; started: Promise<void>; ended: Promise<void> };
}

/** Reads `context` of the kubeconfig at `file` (certificate data inline, as kind writes it). */
export function kubeApi(file: string, context: string, sockets = 16): KubeApi {
  // biome-ignore lint/suspicious/noExplicitAny: the kubeconfig document
  const cfg: any = YAML.parse(readFileSync(file, "utf8"));
  const ctx = cfg.contexts.find((c: { name: string }) => c.name === context)?.context;
  if (!ctx) throw new Error(`context ${context} not in ${file}`);
  const cluster = cfg.clusters.find((c: { name: string }) => c.name === ctx.cluster)?.cluster;
  const user = cfg.users.find((u: { name: string }) => u.name === ctx.user)?.user;
  const b64 = (s: string) => Buffer.from(s, "base64");
  const tls = {
    ca: b64(cluster["certificate-authority-data"]),
    cert: b64(user["client-certificate-data"]),
    key: b64(user["client-key-data"]),
  };
  const client = tlsApiClient(cluster.server, tls, sockets);
  const url = new URL(cluster.server);
  const base = { host: url.hostname, port: url.port, headers: { accept: "application/json" } };

  const watch = (p: string, onEvent: (e: WatchEvent) => void) => {
    // Its own connection: a watch holds it for as long as it runs.
    const req = https.request({ ...base, ...tls, path: p, method: "GET", agent: false });
    let started!: () => void;
    const startedP = new Promise<void>((r) => (started = r));
    const ended = new Promise<void>((resolve, reject) => {
      req.on("response", (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(new Error(`watch ${p}: HTTP ${res.statusCode}`));
        }
        started();
        const lines = createInterface({ input: res });
        lines.on("line", (line) => {
          if (line.trim()) onEvent(JSON.parse(line) as WatchEvent);
        });
        // stop() aborts the response: the end of the stream, not a failure.
        lines.on("error", () => resolve());
        res.on("end", resolve);
        res.on("error", () => resolve());
      });
      req.on("error", (err) => (req.destroyed ? resolve() : reject(err)));
      req.on("close", () => resolve());
    });
    req.end();
    return {
      stop: () => req.destroy(),
      started: Promise.race([startedP, ended.then(() => Promise.reject(new Error(`watch ${p} ended`)))]),
      ended,
    };
  };

  return { ...client, watch };
}
