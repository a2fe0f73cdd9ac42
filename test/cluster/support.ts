/**
 * Helpers of the `cluster` project: the kind cluster that test/cluster/global-setup.ts brought up
 * (scripts/kind-up.sh), kubectl and helm against it, port-forwards, polling.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pollUntil } from "../support/wait.js";

export const ROOT = path.resolve(import.meta.dirname, "../..");
export const CACHE = process.env.TOLLGATE_CACHE_DIR ?? path.join(os.homedir(), ".cache/tollgate");
export const CLUSTER = process.env.TOLLGATE_TEST_CLUSTER ?? "tollgate-test";
export const KUBECONFIG = path.join(CACHE, "kind", `${CLUSTER}.kubeconfig`);
export const CONTEXT = `kind-${CLUSTER}`;
/** The chart's CustomResourceDefinitions (kept by helm uninstall). */
export const CRDS = [
  "organizations.tollgate.dev",
  "governancepolicies.tollgate.dev",
  "approverteams.tollgate.dev",
];
/** Tag of the project's images built by kind-up.sh for the tests. */
export const TAG = process.env.TOLLGATE_TEST_IMAGE_TAG ?? "cluster-test";

/** The env file written by scripts/build-kind.sh (KIND, KUBECTL, HELM, ...). */
export function kindEnv(): Record<string, string> {
  const file = path.join(CACHE, "kind", "current.env");
  if (!existsSync(file)) throw new Error(`${file} missing: scripts/build-kind.sh has not run`);
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^([A-Z0-9_]+)='(.*)'$/.exec(line);
    if (m) env[m[1]!] = m[2]!;
  }
  return env;
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command (no shell), collecting its output. */
export function run(
  cmd: string,
  args: string[],
  opts: { input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: { ...process.env, KUBECONFIG, ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 300_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.end(opts.input ?? "");
  });
}

const env = kindEnv();
export const KUBECTL = env.KUBECTL!;
export const HELM = env.HELM!;

/** kubectl against the test cluster; throws on a non-zero exit. */
export async function k(args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  const r = await kTry(args, opts);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} (exit ${r.code}): ${r.stderr || r.stdout}`);
  return r.stdout;
}
export const kTry = (args: string[], opts: { input?: string; timeoutMs?: number } = {}) =>
  run(KUBECTL, ["--context", CONTEXT, ...args], opts);
/** kubectl get -o json. */
export const kJson = async (args: string[]) => JSON.parse(await k([...args, "-o", "json"]));

/** helm against the test cluster; throws on a non-zero exit. */
export async function helm(args: string[], timeoutMs = 600_000): Promise<string> {
  const r = await run(HELM, ["--kube-context", CONTEXT, ...args], {
    timeoutMs,
    env: {
      HELM_CACHE_HOME: path.join(CACHE, "kind/helm/cache"),
      HELM_CONFIG_HOME: path.join(CACHE, "kind/helm/config"),
      HELM_DATA_HOME: path.join(CACHE, "kind/helm/data"),
    },
  });
  if (r.code !== 0) throw new Error(`helm ${args.join(" ")} (exit ${r.code}): ${r.stderr || r.stdout}`);
  return r.stdout;
}

/** Polls `fn` until it returns a truthy value; throws with `what` after `timeoutMs`. */
export function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 120_000,
  intervalMs = 500,
): Promise<T> {
  return pollUntil(what, fn, timeoutMs, intervalMs);
}

/** `kubectl port-forward` to a Service or pod on a free local port (loopback only). */
export async function portForward(
  ns: string,
  target: string,
  port: number,
): Promise<{ url: string; close: () => void }> {
  const child: ChildProcess = spawn(
    KUBECTL,
    ["--context", CONTEXT, "-n", ns, "port-forward", "--address", "127.0.0.1", target, `:${port}`],
    { env: { ...process.env, KUBECONFIG }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let err = "";
  child.stderr!.on("data", (d) => (err += d));
  const local = await new Promise<number>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(
      () => reject(new Error(`port-forward ${target}: no port after 30 s: ${err}`)),
      30_000,
    );
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.on("exit", (code) => reject(new Error(`port-forward ${target} exited ${code}: ${err}`)));
  });
  return { url: `http://127.0.0.1:${local}`, close: () => child.kill() };
}

/** JSON HTTP call with a bearer token; throws on a non-2xx answer. */
export { api, apiCall } from "../support/http.js";

/** Built and loaded into the cluster by test/cluster/build-test-images.sh (Debian's packages). */
export const POSTGRES_IMAGE = "tollgate.local/postgres:test";
/** bench/cluster's Go relay floor, built and loaded by the same script (scripts/build-go-relay.sh's binary). */
export const GO_RELAY_IMAGE = "tollgate.local/go-relay:test";

/** `--set` arguments of the chart for the project's images built for the cluster (TAG). */
export const CHART_IMAGE_TAGS = ["service", "operator", "sidecar"].flatMap((c) => [
  "--set",
  `${c}.image.tag=${TAG}`,
]);

/**
 * PostgreSQL ({@link POSTGRES_IMAGE}) in namespace `ns` as a Deployment + Service `postgres`, and
 * the Secret `tollgate-postgres` the chart reads (database.existingSecret); waits until it is
 * rolled out.
 */
export async function installPostgres(ns: string, password: string): Promise<void> {
  await k(["apply", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "postgres", namespace: ns },
          spec: {
            selector: { matchLabels: { app: "postgres" } },
            template: {
              metadata: { labels: { app: "postgres" } },
              spec: {
                containers: [
                  {
                    name: "postgres",
                    image: POSTGRES_IMAGE,
                    imagePullPolicy: "Never",
                    env: [
                      { name: "POSTGRES_USER", value: "tollgate" },
                      { name: "POSTGRES_PASSWORD", value: password },
                      { name: "POSTGRES_DB", value: "tollgate" },
                    ],
                    ports: [{ containerPort: 5432 }],
                    readinessProbe: { tcpSocket: { port: 5432 }, periodSeconds: 2 },
                    volumeMounts: [{ name: "data", mountPath: "/var/lib/postgresql" }],
                  },
                ],
                volumes: [{ name: "data", emptyDir: {} }],
              },
            },
          },
        },
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "postgres", namespace: ns },
          spec: { selector: { app: "postgres" }, ports: [{ port: 5432 }] },
        },
        {
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: "tollgate-postgres", namespace: ns },
          stringData: { url: `postgres://tollgate:${password}@postgres.${ns}.svc:5432/tollgate` },
        },
      ],
    }),
  });
  await k(["-n", ns, "rollout", "status", "deployment/postgres", "--timeout=180s"], { timeoutMs: 200_000 });
}
