/**
 * Helpers of the kube suite: a real control plane with the Tollgate CRDs installed, kubectl
 * wrappers that throw on failure, operators started in-process or as child processes against the
 * real governance service, polling, and the shared per-file fixtures ({@link useKubeEnv},
 * {@link useOperatorEnv}) that start those parts before a file's tests and stop them after.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import type { OperatorConfig } from "../../operator/config.js";
import { createOperatorLogger } from "../../operator/log.js";
import { type RunningOperator, startOperator } from "../../operator/operator.js";
import {
  type ControlPlane,
  freePorts,
  issueCertificate,
  startControlPlane,
} from "../support/controlplane.js";
import { kubectl } from "../support/kubectl.js";
import { startTestService, type TestService } from "../support/service.js";
import { pollUntil } from "../support/wait.js";

// The kube project has no database env of its own: the service under test uses embedded PGlite.
process.env.TOLLGATE_TEST_DB ??= "pglite";

export const root = path.resolve(import.meta.dirname, "../..");
export const OPERATOR_NAMESPACE = "tollgate-system";

/** A control plane with the CRDs applied and established, and the operator's namespace. */
export interface KubeEnv {
  cp: ControlPlane;
  /** Runs kubectl; throws with stderr on a non-zero exit; returns stdout. */
  k(args: string[], input?: string): Promise<string>;
  /** Runs kubectl and returns the exit code and output (for expected failures). */
  kTry(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }>;
  /** `kubectl get -o json` of one object, or undefined when it does not exist. */
  get<T = any>(kind: string, name: string, namespace?: string): Promise<T | undefined>;
  /** `kubectl apply -f -` of objects (JSON). */
  apply(...objects: unknown[]): Promise<string>;
  stop(): Promise<void>;
}

/** Starts a control plane and installs crds/. */
export async function startKubeEnv(): Promise<KubeEnv> {
  const cp = await startControlPlane();
  const kTry = async (args: string[], input?: string) => kubectl(cp, args, { input });
  const k = async (args: string[], input?: string) => {
    const r = await kTry(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
    return r.stdout;
  };
  const env: KubeEnv = {
    cp,
    k,
    kTry,
    async get(kind, name, namespace) {
      const r = await kTry(["get", kind, name, "-o", "json", ...(namespace ? ["-n", namespace] : [])]);
      if (r.code !== 0) {
        if (/NotFound|not found/.test(r.stderr)) return undefined;
        throw new Error(`kubectl get ${kind} ${name}: ${r.stderr}`);
      }
      return JSON.parse(r.stdout);
    },
    apply: (...objects) => k(["apply", "-f", "-"], objects.map((o) => JSON.stringify(o)).join("\n")),
    stop: () => cp.stop(),
  };
  try {
    await k(["apply", "-f", path.join(root, "crds")]);
    await k(["wait", "--for", "condition=established", "crd", "--all", "--timeout=60s"]);
    await k(["create", "namespace", OPERATOR_NAMESPACE]);
  } catch (err) {
    await cp.stop();
    throw err;
  }
  return env;
}

/** Polls `fn` until it returns a truthy value (returned) or `timeoutMs` passes (throws naming `what`). */
export function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 60_000,
  intervalMs = 200,
): Promise<T> {
  return pollUntil(what, fn, timeoutMs, intervalMs);
}

/** The condition of `type` in an object's status. */
export const conditionOf = (obj: any, type: string) =>
  (obj?.status?.conditions ?? []).find((c: { type: string }) => c.type === type) as
    | { status: string; reason: string; message: string; observedGeneration?: number }
    | undefined;

/** Waits until the object's Ready and Synced are True at its current generation; returns it. */
export function waitReady(env: KubeEnv, kind: string, name: string, namespace?: string, timeoutMs = 60_000) {
  return waitFor(
    `${kind} ${namespace ? `${namespace}/` : ""}${name} Ready`,
    async () => {
      const obj = await env.get(kind, name, namespace);
      const gen = obj?.metadata?.generation;
      const ready = conditionOf(obj, "Ready");
      const synced = conditionOf(obj, "Synced");
      return obj?.status?.observedGeneration === gen &&
        ready?.status === "True" &&
        synced?.status === "True" &&
        synced.observedGeneration === gen
        ? obj
        : undefined;
    },
    timeoutMs,
  );
}

/**
 * Waits for an Event with `reason` (and `type` when given) about object `name` in `namespace`
 * (all namespaces when undefined). Events are recorded asynchronously, after the status.
 */
export function waitForEvent(
  env: KubeEnv,
  q: { namespace?: string; name?: string; reason: string; type?: "Normal" | "Warning" },
) {
  return waitFor(`a ${q.reason} event${q.name ? ` about ${q.name}` : ""}`, async () => {
    const args = ["get", "events", "-o", "json", ...(q.namespace ? ["-n", q.namespace] : ["-A"])];
    if (q.name) args.push("--field-selector", `involvedObject.name=${q.name}`);
    const items = JSON.parse(await env.k(args)).items as Array<{
      reason: string;
      type: string;
      message: string;
    }>;
    return items.find((e) => e.reason === q.reason && (!q.type || e.type === q.type));
  });
}

/**
 * Writes the service admin token to a file the operator reads (a mounted Secret in a cluster),
 * inside the control plane's temporary directory (removed by `env.stop()`).
 */
export async function tokenFile(env: KubeEnv, svc: TestService): Promise<string> {
  const file = path.join(env.cp.dir, `admin-token-${randomBytes(4).toString("hex")}`);
  await writeFile(file, svc.adminToken, { mode: 0o600 });
  return file;
}

/** Operator configuration for tests: loopback ports, short leases, fast retries. */
export function testOperatorConfig(
  env: KubeEnv,
  opts: { serviceUrl: string; adminTokenFile: string; identity: string },
  overrides: Partial<OperatorConfig> = {},
): OperatorConfig {
  return {
    kubeconfigPath: env.cp.kubeconfigPath,
    serviceUrl: opts.serviceUrl,
    adminTokenFile: opts.adminTokenFile,
    namespace: OPERATOR_NAMESPACE,
    identity: opts.identity,
    lease: { name: "tollgate-operator", durationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 },
    webhook: {
      host: "127.0.0.1",
      port: 0,
      serviceName: "tollgate-operator",
      extraSans: ["127.0.0.1", "localhost"],
      configurationName: "tollgate-sidecar-injector",
      policyValidatorName: "tollgate-policy-validator",
      tlsSecretName: "tollgate-webhook-tls",
      certMode: "self-signed",
      certDir: "",
    },
    sidecar: {
      image: "ghcr.io/tollgate/sidecar:test",
      serviceUrl: "http://tollgate.tollgate-system.svc:8000",
      mode: "container",
      // The kube suite exercises the namespace API keys the operator mints (sidecar auth apiKey);
      // the default, projected service account tokens, needs a kubelet: test/kube/identity.test.ts
      // reviews real tokens, and the cluster project runs the default end to end.
      auth: "apiKey",
    },
    health: { host: "127.0.0.1", port: 0 },
    resyncMs: 60_000,
    workers: 4,
    logLevel: process.env.LOG_LEVEL ?? "warn",
    ...overrides,
  };
}

/** Starts an operator in this process. */
export function startTestOperator(config: OperatorConfig): Promise<RunningOperator> {
  return startOperator({
    config,
    defaultMetrics: false,
    log: createOperatorLogger({ level: config.logLevel }),
  });
}

/** An operator running as a child process (`node --import tsx operator/main.ts`). */
export interface OperatorProcess {
  child: ChildProcess;
  identity: string;
  healthPort: number;
  /** Everything it logged (stdout and stderr). */
  output(): string;
  /** SIGKILL (no cleanup, no Lease release) and wait for exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful: releases the Lease) and wait for exit. */
  terminate(): Promise<void>;
}

/** Spawns an operator child process configured through its environment, like in a cluster. */
export async function spawnOperator(
  env: KubeEnv,
  opts: { serviceUrl: string; adminTokenFile: string; identity: string; extraEnv?: Record<string, string> },
): Promise<OperatorProcess> {
  const [healthPort, webhookPort] = await freePorts(2);
  const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "operator/main.ts")], {
    cwd: root,
    env: {
      ...process.env,
      KUBECONFIG: env.cp.kubeconfigPath,
      TOLLGATE_SERVICE_URL: opts.serviceUrl,
      TOLLGATE_ADMIN_TOKEN_FILE: opts.adminTokenFile,
      TOLLGATE_OPERATOR_NAMESPACE: OPERATOR_NAMESPACE,
      TOLLGATE_OPERATOR_IDENTITY: opts.identity,
      TOLLGATE_LEASE_DURATION_SECONDS: "4",
      TOLLGATE_LEASE_RENEW_DEADLINE_SECONDS: "3",
      TOLLGATE_LEASE_RETRY_PERIOD_SECONDS: "0.5",
      TOLLGATE_WEBHOOK_HOST: "127.0.0.1",
      TOLLGATE_WEBHOOK_PORT: String(webhookPort),
      TOLLGATE_WEBHOOK_EXTRA_SANS: "127.0.0.1",
      TOLLGATE_HEALTH_HOST: "127.0.0.1",
      TOLLGATE_HEALTH_PORT: String(healthPort),
      // As the in-process operators of this suite: namespace API keys (see testOperatorConfig).
      TOLLGATE_SIDECAR_AUTH: "apiKey",
      LOG_LEVEL: "info",
      ...opts.extraEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (c) => {
    out += c;
  });
  child.stderr!.on("data", (c) => {
    out += c;
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const proc: OperatorProcess = {
    child,
    identity: opts.identity,
    healthPort: healthPort!,
    output: () => out,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    async terminate() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
  await waitFor(
    `operator ${opts.identity} /healthz`,
    async () => {
      if (child.exitCode !== null) throw new Error(`operator exited: ${out}`);
      return (await httpGet(`http://127.0.0.1:${healthPort}/healthz`)).status === 200;
    },
    60_000,
  );
  return proc;
}

/** GET over plain HTTP; resolves with status and body (never throws on HTTP errors). */
export function httpGet(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { timeout: 5_000 }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on("error", reject);
  });
}

/** Value of an unlabelled Prometheus gauge/counter in a /metrics text, or undefined. */
export function metricValue(text: string, name: string, labels = ""): number | undefined {
  const line = text
    .split("\n")
    .find((l) => l.startsWith(`${name}${labels} `) || l.startsWith(`${name}${labels}{`));
  return line ? Number(line.split(" ").pop()) : undefined;
}

/**
 * A kubeconfig (written into the control plane's directory; returns its path) for `user`,
 * authenticated by a client certificate from the control plane's client CA, with no groups: the
 * user may do only what RBAC grants it.
 */
export async function userKubeconfig(env: KubeEnv, user: string): Promise<string> {
  const cert = await issueCertificate(
    env.cp.dir,
    `${user}-user`,
    { cert: env.cp.certs.clientCaCertPath, key: env.cp.certs.clientCaKeyPath },
    `/CN=${user}`,
    [
      "basicConstraints=critical,CA:FALSE",
      "keyUsage=critical,digitalSignature",
      "extendedKeyUsage=clientAuth",
    ],
  );
  const b64 = async (p: string) => (await readFile(p)).toString("base64");
  const file = path.join(env.cp.dir, `${user}-kubeconfig`);
  await writeFile(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "c",
          cluster: { server: env.cp.server, "certificate-authority-data": await b64(env.cp.caCertPath) },
        },
      ],
      users: [
        {
          name: user,
          user: { "client-certificate-data": await b64(cert.cert), "client-key-data": await b64(cert.key) },
        },
      ],
      contexts: [{ name: "c", context: { cluster: "c", user } }],
      "current-context": "c",
    }),
    { mode: 0o600 },
  );
  return file;
}

/** What {@link useKubeEnv} provides; `env` is set once the file's beforeAll ran. */
export interface KubeFixture {
  env: KubeEnv;
}

/**
 * Shared fixture: a control plane with the CRDs for the tests of the calling `describe` (call it
 * there): started in beforeAll, stopped in afterAll (after the file's own afterAll hooks, which
 * run first).
 */
export function useKubeEnv(): KubeFixture {
  const f = {} as KubeFixture;
  beforeAll(async () => {
    f.env = await startKubeEnv();
  });
  afterAll(async () => {
    await f.env?.stop();
  });
  return f;
}

/** What {@link useOperatorEnv} provides; set once the file's beforeAll ran. */
export interface OperatorFixture extends KubeFixture {
  /** The governance service (embedded PGlite, listening on loopback). */
  svc: TestService;
  /** The service admin token file the operators read. */
  adminTokenFile: string;
  /** The in-process operator; a test may stop it and assign another (afterAll stops the current one). */
  op: RunningOperator | undefined;
  /** Starts an in-process operator against this fixture's service as `identity`. */
  startOperator(identity: string, overrides?: Partial<OperatorConfig>): Promise<RunningOperator>;
}

/** Options of {@link useOperatorEnv}. */
export interface OperatorFixtureOptions {
  /** Identity of the operator started before the tests. */
  identity: string;
  /**
   * Runs after the control plane and the service are up, before the operator starts; returns
   * overrides of its configuration (e.g. a least-privilege kubeconfig).
   */
  prepare?: (f: OperatorFixture) => Promise<Partial<OperatorConfig> | undefined>;
  /** Wait until the operator leads and its reconcilers run (default true). */
  reconciling?: boolean;
}

/**
 * Shared fixture of the suites that run the operator: a control plane with the CRDs, the
 * governance service and an in-process operator (see {@link testOperatorConfig}), started in
 * beforeAll of the calling `describe` and stopped in afterAll (operator, service, control plane).
 */
export function useOperatorEnv(opts: OperatorFixtureOptions): OperatorFixture {
  const f = {
    op: undefined,
    startOperator: async (identity: string, overrides: Partial<OperatorConfig> = {}) =>
      startTestOperator(
        testOperatorConfig(
          f.env,
          { serviceUrl: f.svc.url, adminTokenFile: f.adminTokenFile, identity },
          overrides,
        ),
      ),
  } as OperatorFixture;
  beforeAll(async () => {
    f.env = await startKubeEnv();
    f.svc = await startTestService({ listen: true });
    f.adminTokenFile = await tokenFile(f.env, f.svc);
    const overrides = (await opts.prepare?.(f)) ?? {};
    f.op = await f.startOperator(opts.identity, overrides);
    if (opts.reconciling ?? true) await f.op.whenReconciling();
  });
  afterAll(async () => {
    await f.op?.stop();
    await f.svc?.close();
    await f.env?.stop();
  });
  return f;
}
