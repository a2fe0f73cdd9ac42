/**
 * The sidecar as its own process, configured as the webhook configures it (configuration from
 * the environment, the API key from a mounted file) and run from the TypeScript sources through
 * tsx as in development (`node --import tsx sidecar/main.ts`) or from a production build (the
 * image runs `node dist/sidecar.js`); a local HTTP tool for it to forward to; and per-process
 * readings from /proc (Linux): resident memory and CPU time.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../test/support/postgres.js";
import { repoRoot } from "./parts.js";

/** A running sidecar process. */
export interface SidecarProcess {
  /** host:port of its gRPC server. */
  grpcAddress: string;
  /** Base URL of its HTTP face (/readyz, /metrics). */
  httpUrl: string;
  proc: ChildProcess;
  /** SIGTERM (graceful drain), waits for the exit, removes the key file. */
  stop(): Promise<void>;
}

/** Options of startSidecarProcess. */
export interface SidecarProcessOptions {
  /** TOLLGATE_SERVICE_URL. */
  serviceUrl: string;
  /** The client API key, written to a 0600 file as the webhook mounts it. */
  apiKey: string;
  /** TOLLGATE_UPSTREAMS (default none). */
  upstreams?: unknown[];
  /** Node flags before the entry, e.g. --cpu-prof. */
  nodeArgs?: string[];
  /**
   * What node runs, relative to the repository root: the sources through tsx (default,
   * `["--import", "tsx", "sidecar/main.ts"]`) or a built bundle (e.g. `["dist/sidecar.js"]`).
   */
  entry?: string[];
  /** More environment (e.g. NODE_ENV). */
  env?: Record<string, string>;
  /** The checkout to run (default this one), e.g. an older version to compare against. */
  root?: string;
}

/** Starts the sidecar; resolves when /readyz answers 200. */
export async function startSidecarProcess(opts: SidecarProcessOptions): Promise<SidecarProcess> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tg-bench-sidecar-"));
  const keyFile = path.join(dir, "api-key");
  writeFileSync(keyFile, opts.apiKey, { mode: 0o600 });
  const [grpcPort, httpPort] = [await freePort(), await freePort()];
  const entry = opts.entry ?? ["--import", "tsx", "sidecar/main.ts"];
  const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...entry], {
    cwd: opts.root ?? repoRoot,
    env: {
      PATH: process.env.PATH ?? "",
      TOLLGATE_SERVICE_URL: opts.serviceUrl,
      TOLLGATE_API_KEY_FILE: keyFile,
      TOLLGATE_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
      TOLLGATE_HTTP_ADDRESS: `127.0.0.1:${httpPort}`,
      TOLLGATE_UPSTREAMS: JSON.stringify(opts.upstreams ?? []),
      LOG_LEVEL: "warn",
      ...opts.env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  proc.stderr!.on("data", (d) => (stderr = (stderr + d).slice(-4000)));
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`sidecar exited:\n${stderr}`);
    const ok = await fetch(`${httpUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`sidecar not ready:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    grpcAddress: `127.0.0.1:${grpcPort}`,
    httpUrl,
    proc,
    async stop() {
      // Not exited yet (a process killed by a signal has exitCode null and signalCode set).
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once("exit", r));
        proc.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A local HTTP tool (an http upstream of the sidecar) that echoes the JSON body it is sent. */
export async function startEchoUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const out = `{"ok":true,"echo":${Buffer.concat(chunks).toString("utf8") || "null"}}`;
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
