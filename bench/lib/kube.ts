/**
 * Real Kubernetes parts for benchmarks: a control plane (etcd + kube-apiserver from
 * scripts/build-control-plane.sh) with the Tollgate CRDs installed, the operator as its own
 * process configured through its environment (as deployed: its event loop is not the load
 * generator's), and a lean API-server client (node:https keep-alive with the admin client
 * certificate; @kubernetes/client-node's undici stack costs the load generator several times
 * more CPU per request, which a 2-core machine takes from the API server).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import path from "node:path";
import { type ControlPlane, freePorts, startControlPlane } from "../../test/support/controlplane.js";
import { kubectl } from "../../test/support/kubectl.js";
import { repoRoot } from "./parts.js";
import { procStat } from "./proc.js";

/** Namespace the operator runs in (Lease, webhook TLS Secret). */
export const OPERATOR_NAMESPACE = "tollgate-system";

/** A control plane with crds/ applied and established, and the operator's namespace. */
export interface KubeBench {
  cp: ControlPlane;
  /** Runs kubectl; throws with stderr on a non-zero exit; returns stdout. */
  k(args: string[], input?: string): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a control plane and installs the Tollgate CRDs. */
export async function startKubeBench(): Promise<KubeBench> {
  const cp = await startControlPlane();
  const k = async (args: string[], input?: string) => {
    const r = await kubectl(cp, args, { input });
    if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
    return r.stdout;
  };
  try {
    await k(["apply", "-f", path.join(repoRoot, "crds")]);
    await k(["wait", "--for", "condition=established", "crd", "--all", "--timeout=60s"]);
    await k(["create", "namespace", OPERATOR_NAMESPACE]);
  } catch (err) {
    await cp.stop();
    throw err;
  }
  return { cp, k, stop: () => cp.stop() };
}

/** The operator running as a child process. */
export interface OperatorProcess {
  proc: ChildProcess;
  /** http://127.0.0.1:<port> of /healthz, /readyz and /metrics. */
  healthUrl: string;
  webhookPort: number;
  /** The operator's /metrics text. */
  metrics(): Promise<string>;
  /** SIGTERM and wait for exit (a --cpu-prof profile is written on exit). */
  stop(): Promise<void>;
}

/** Options of {@link startOperatorProcess}. */
export interface OperatorProcessOptions {
  cp: ControlPlane;
  serviceUrl: string;
  adminToken: string;
  /** TOLLGATE_WORKERS; the operator's default when undefined. */
  workers?: number;
  /** Directory for a --cpu-prof profile of the operator, or null for none. */
  profileDir?: string | null;
}

/**
 * Spawns `node --import tsx operator/main.ts` against the control plane (admin kubeconfig,
 * webhook serving on 127.0.0.1) and resolves when /healthz answers.
 */
export async function startOperatorProcess(o: OperatorProcessOptions): Promise<OperatorProcess> {
  const [healthPort, webhookPort] = (await freePorts(2)) as [number, number];
  const tokenFile = path.join(o.cp.dir, "bench-admin-token");
  writeFileSync(tokenFile, o.adminToken, { mode: 0o600 });
  const nodeArgs = o.profileDir ? ["--cpu-prof", `--cpu-prof-dir=${o.profileDir}`] : [];
  const proc = spawn(process.execPath, [...nodeArgs, "--import", "tsx", "operator/main.ts"], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? "",
      KUBECONFIG: o.cp.kubeconfigPath,
      TOLLGATE_SERVICE_URL: o.serviceUrl,
      TOLLGATE_ADMIN_TOKEN_FILE: tokenFile,
      TOLLGATE_OPERATOR_NAMESPACE: OPERATOR_NAMESPACE,
      TOLLGATE_OPERATOR_IDENTITY: "bench",
      TOLLGATE_WEBHOOK_HOST: "127.0.0.1",
      TOLLGATE_WEBHOOK_PORT: String(webhookPort),
      TOLLGATE_WEBHOOK_EXTRA_SANS: "127.0.0.1",
      TOLLGATE_HEALTH_HOST: "127.0.0.1",
      TOLLGATE_HEALTH_PORT: String(healthPort),
      TOLLGATE_SIDECAR_IMAGE: "ghcr.io/tollgate/sidecar:bench",
      // The control plane runs without the ServiceAccount admission plugin, so Pods have no
      // serviceAccountName and the API server refuses the default projected-token volume (422);
      // the API-key patch is the same size (one volume, one mount, one variable).
      TOLLGATE_SIDECAR_AUTH: "apiKey",
      ...(o.workers !== undefined && { TOLLGATE_WORKERS: String(o.workers) }),
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  proc.stderr!.on("data", (d) => {
    stderr = (stderr + d).slice(-8000);
  });
  const exited = new Promise<void>((r) => proc.once("exit", () => r()));
  const healthUrl = `http://127.0.0.1:${healthPort}`;
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
    await exited;
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`operator exited:\n${stderr}`);
    const ok = await fetch(`${healthUrl}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`operator not healthy:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    proc,
    healthUrl,
    webhookPort,
    metrics: async () => (await fetch(`${healthUrl}/metrics`)).text(),
    stop,
  };
}

/** Sum of a Prometheus sample over every label set whose labels contain `labels` (e.g. `result="success"`). */
export function metricSum(text: string, name: string, labels = ""): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name} `) && !line.startsWith(`${name}{`)) continue;
    if (labels && !line.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

/** One API-server response: status code, body text and parsed JSON body (undefined when empty or not JSON). */
export interface ApiResponse {
  status: number;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: API objects of many kinds
  body: any;
}

/** A keep-alive HTTPS client of the API server authenticated as the control plane's admin. */
export interface ApiClient {
  /** Sends one request (JSON body when given); rejects on network errors, never on HTTP errors. */
  request(method: string, path: string, body?: unknown, contentType?: string): Promise<ApiResponse>;
  close(): void;
}

/** An {@link ApiClient} with at most `sockets` connections. */
export function apiClient(cp: ControlPlane, sockets: number): ApiClient {
  return tlsApiClient(
    cp.server,
    {
      ca: readFileSync(cp.certs.caCertPath),
      cert: readFileSync(cp.certs.adminCertPath),
      key: readFileSync(cp.certs.adminKeyPath),
    },
    sockets,
  );
}

/** Client TLS material of an API server: its CA, and the client's certificate and key. */
export interface ClientTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/**
 * An {@link ApiClient} of the API server at `server` (https URL) authenticated by the client
 * certificate in `tls`, with at most `sockets` keep-alive connections.
 */
export function tlsApiClient(server: string, tls: ClientTls, sockets: number): ApiClient {
  const url = new URL(server);
  const agent = new https.Agent({ keepAlive: true, maxSockets: sockets, ...tls });
  return {
    request(method, p, body, contentType = "application/json") {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      return new Promise((resolve, reject) => {
        const req = https.request(
          {
            host: url.hostname,
            port: url.port,
            path: p,
            method,
            agent,
            headers: {
              accept: "application/json",
              ...(payload !== undefined && {
                "content-type": contentType,
                "content-length": Buffer.byteLength(payload),
              }),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString("utf8");
              let parsed: unknown;
              try {
                parsed = text ? JSON.parse(text) : undefined;
              } catch {
                parsed = undefined;
              }
              resolve({ status: res.statusCode ?? 0, text, body: parsed });
            });
            res.on("error", reject);
          },
        );
        req.on("error", reject);
        req.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}

/** Nearest-rank percentile `p` (0–100) of `values`; NaN when empty. */
export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? Number.NaN;
}

/** One process as /proc shows it; `cpuMs` is user + system time so far. */
export interface ProcStat {
  pid: number;
  ppid: number;
  cmdline: string;
  cpuMs: number;
}

/** Every readable process of /proc (empty where there is no /proc). */
export function processes(): ProcStat[] {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  const out: ProcStat[] = [];
  for (const pid of pids) {
    try {
      const stat = procStat(Number(pid));
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      out.push({ pid: Number(pid), ppid: stat.ppid, cmdline, cpuMs: (stat.userUs + stat.systemUs) / 1000 });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/**
 * CPU time (ms) each part of a benchmark has used so far. A part is a predicate over a process
 * and its parent; a process counts for the first part that claims it. Take two snapshots and
 * subtract to see where a phase's CPU went (short-lived processes that exit in between are lost).
 */
export function cpuByPart(
  parts: Array<[string, (p: ProcStat, parent: ProcStat | undefined) => boolean]>,
): Record<string, number> {
  const all = processes();
  const byPid = new Map(all.map((p) => [p.pid, p]));
  const out: Record<string, number> = Object.fromEntries(parts.map(([name]) => [name, 0]));
  for (const p of all) {
    const part = parts.find(([, claims]) => claims(p, byPid.get(p.ppid)));
    if (part) out[part[0]]! += p.cpuMs;
  }
  return out;
}
