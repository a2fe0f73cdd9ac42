/**
 * The parts bench/sidecar-overhead runs besides the service: the local HTTP tool (upstream),
 * the direct call to it, the sidecar as its own process, and per-process CPU readings.
 */

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import { type SidecarProcess, startSidecarProcess as startSidecar } from "../lib/sidecar-process.js";

/** The local HTTP tool: echoes the JSON body. */
export async function startUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const out = `{"ok":true,"echo":${body || "null"}}`;
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(out) });
      res.end(out);
    });
  });
  // Longer than any run: the clients, not this server, decide when an idle socket goes.
  server.keepAliveTimeout = 600_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/tool`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** One direct call: the same request the sidecar's http upstream makes. */
export function directCall(url: URL, agent: http.Agent, body: string): Promise<void> {
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
          JSON.parse(Buffer.concat(chunks).toString("utf8"));
          resolve();
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
  root?: string;
}): Promise<SidecarProcess> {
  return startSidecar({
    serviceUrl: opts.serviceUrl,
    apiKey: opts.apiKey,
    upstreams: [{ name: "tool", type: "http", url: opts.upstreamUrl }],
    nodeArgs: opts.profileDir ? ["--cpu-prof", `--cpu-prof-dir=${opts.profileDir}`] : [],
    ...(opts.root && { root: opts.root }),
  });
}

/** Kernel clock ticks per second (the unit of /proc/<pid>/stat times). */
const clockTicks = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time a process has used so far, in µs (user and system, all threads). */
export interface CpuTime {
  userUs: number;
  systemUs: number;
}

/**
 * A process's CPU time so far, from /proc/<pid>/stat (Linux; resolution one clock tick, 10 ms:
 * read it over many calls).
 */
export function processCpu(pid: number): CpuTime {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the parenthesized command name (which may contain spaces); utime and stime
  // are fields 14 and 15 of the whole line.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const us = (ticks: string | undefined) => (Number(ticks) / clockTicks) * 1e6;
  return { userUs: us(fields[11]), systemUs: us(fields[12]) };
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
