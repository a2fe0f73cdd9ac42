/**
 * Operator benchmark on a real control plane (kube-apiserver + etcd from
 * scripts/build-control-plane.sh) and a real governance service (embedded PGlite):
 *
 * 1. Reconcile latency: GovernancePolicies created one at a time; apply → Synced=True (seen by a
 *    watch) p50/p99, against a baseline measured in the same run (an API-server create plus a
 *    direct admin-API PUT of the same policy, the two round trips a reconcile cannot avoid).
 * 2. Burst: the same number created at once; time until all are Synced, per-resource p50/p99.
 * 3. Webhook admission latency: AdmissionReviews POSTed to the operator's HTTPS webhook
 *    (keep-alive) p50/p99, against a no-op HTTPS server in the same process; and Pod creation
 *    through the API server with and without injection.
 *
 * Usage: npx tsx bench/operator/run.ts [--quick] [--count N] [--db postgres|pglite] [--workers N]
 * The service runs in this process on a throwaway real PostgreSQL cluster (default) or PGlite.
 * --quick: 10 resources and 200 reviews (the kube suite runs it for correctness). The last line
 * is `RESULT <json>`. Exits 1 when a resource does not converge; timings are reported, not gated.
 * Targets (issue 6): reconcile p99 ≤ 1000 ms, webhook p99 ≤ 20 ms.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import Fastify from "fastify";
import { GroupObjects, loadKubeClients } from "../../operator/kube/clients.js";
import { Watch } from "../../operator/kube/k8s.js";
import { createOperatorLogger } from "../../operator/log.js";
import { startOperator } from "../../operator/operator.js";
import { createWebhookPki } from "../../operator/webhook/certs.js";
import { sidecarInjectorConfiguration } from "../../operator/webhook/configuration.js";
import { buildService } from "../../src/service/app.js";
import { migrate } from "../../src/service/db/migrate.js";
import { type Database, openPglite, openPostgres } from "../../src/service/db/pool.js";
import { startControlPlane } from "../../test/support/controlplane.js";
import { kubectl } from "../../test/support/kubectl.js";
import { startPostgres } from "../../test/support/postgres.js";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const countArg = args.indexOf("--count");
const COUNT = countArg >= 0 ? Number(args[countArg + 1]) : quick ? 10 : 100;
const REVIEWS = quick ? 200 : 2000;
const PODS = quick ? 10 : 100;
const dbArg = args.indexOf("--db");
const DB = dbArg >= 0 ? args[dbArg + 1] : "postgres";
if (DB !== "postgres" && DB !== "pglite") throw new Error("--db must be postgres or pglite");
const workersArg = args.indexOf("--workers");
const WORKERS = workersArg >= 0 ? Number(args[workersArg + 1]) : 4;
const NS = "bench";

/** Nearest-rank percentile of `values` (ms). */
function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? Number.NaN;
}
const ms = (n: number) => `${n.toFixed(n < 10 ? 2 : 1)} ms`;
const summary = (v: number[]) => ({ p50: pct(v, 50), p99: pct(v, 99), n: v.length });

async function main(): Promise<number> {
  const t0 = Date.now();
  const cp = await startControlPlane();
  const cleanups: Array<() => Promise<unknown>> = [async () => cp.stop()];
  try {
    const k = async (a: string[], input?: string) => {
      const r = await kubectl(cp, a, { input });
      if (r.code !== 0) throw new Error(`kubectl ${a.join(" ")}: ${r.stderr}`);
      return r.stdout;
    };
    await k(["apply", "-f", path.resolve(import.meta.dirname, "../../crds")]);
    await k(["wait", "--for", "condition=established", "crd", "--all", "--timeout=60s"]);
    await k(["create", "namespace", "tollgate-system"]);

    // The governance service over real HTTP, on real PostgreSQL (as deployed) or embedded PGlite.
    const tmp = await mkdtemp(path.join(os.tmpdir(), "tollgate-bench-"));
    cleanups.push(() => rm(tmp, { recursive: true, force: true }));
    let db: Database;
    if (DB === "postgres") {
      const pgCluster = await startPostgres();
      cleanups.push(() => pgCluster.stop());
      db = await openPostgres(pgCluster.url, 10);
    } else {
      db = await openPglite({ dataDir: null, socketDir: path.join(tmp, "pg") });
    }
    cleanups.push(() => db.close());
    await migrate(db);
    const adminToken = `tga_${randomBytes(32).toString("base64url")}`;
    const service = await buildService({
      db,
      masterKey: randomBytes(32),
      adminToken,
      schedulerIntervalMs: 0,
      defaultMetrics: false,
    });
    const serviceUrl = await service.app.listen({ host: "127.0.0.1", port: 0 });
    cleanups.push(() => service.close());
    const tokenPath = path.join(tmp, "admin-token");
    await writeFile(tokenPath, adminToken, { mode: 0o600 });

    const operator = await startOperator({
      config: {
        kubeconfigPath: cp.kubeconfigPath,
        serviceUrl,
        adminTokenFile: tokenPath,
        namespace: "tollgate-system",
        identity: "bench",
        lease: {
          name: "tollgate-operator",
          durationMs: 15_000,
          renewDeadlineMs: 10_000,
          retryPeriodMs: 2_000,
        },
        webhook: {
          host: "127.0.0.1",
          port: 0,
          serviceName: "tollgate-operator",
          extraSans: ["127.0.0.1"],
          configurationName: "tollgate-sidecar-injector",
          tlsSecretName: "tollgate-webhook-tls",
          certMode: "self-signed",
          certDir: "",
        },
        sidecar: {
          image: "ghcr.io/tollgate/sidecar:bench",
          serviceUrl: "http://tollgate:8000",
          mode: "container",
        },
        health: { host: "127.0.0.1", port: 0 },
        resyncMs: 300_000,
        workers: WORKERS,
        logLevel: "warn",
      },
      defaultMetrics: false,
      log: createOperatorLogger({ level: "warn" }),
    });
    cleanups.push(() => operator.stop());
    await operator.whenReconciling();
    console.log(
      `setup: control plane, service (${DB}) and operator (${WORKERS} workers) ready in ${Date.now() - t0} ms`,
    );

    const { kc, custom } = loadKubeClients(cp.kubeconfigPath);
    const orgs = new GroupObjects(
      custom,
      { group: "tollgate.dev", version: "v1alpha1", plural: "organizations" },
      false,
    );
    const policies = new GroupObjects<{ metadata: { name: string } }>(
      custom,
      { group: "tollgate.dev", version: "v1alpha1", plural: "governancepolicies" },
      true,
    );
    await k(["create", "namespace", NS]);
    await orgs.create({
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "Organization",
      metadata: { name: "bench" },
      spec: { slug: "bench" },
    });
    for (let i = 0; ; i++) {
      const o = (await orgs.get("bench")) as {
        status?: { conditions?: Array<{ type: string; status: string }> };
      };
      if (o.status?.conditions?.some((c) => c.type === "Synced" && c.status === "True")) break;
      if (i > 300) throw new Error("Organization bench did not sync");
      await new Promise((r) => setTimeout(r, 100));
    }

    // Watch policies; resolve waiters when a policy reports Synced=True at its generation.
    const syncedAt = new Map<string, number>();
    const waiters = new Map<string, () => void>();
    // A watch that reconnects when the server ends it (a restart may only delay, never lose, a sample).
    let watch: AbortController | undefined;
    let watchRestarts = 0;
    let stopping = false;
    const startWatch = async (): Promise<void> => {
      watch = await new Watch(kc).watch(
        "/apis/tollgate.dev/v1alpha1/governancepolicies",
        {},
        (_type, obj) => {
          const name = obj?.metadata?.name as string;
          const synced = (obj?.status?.conditions ?? []).find(
            (c: { type: string; status: string; observedGeneration?: number }) =>
              c.type === "Synced" && c.status === "True" && c.observedGeneration === obj.metadata.generation,
          );
          if (synced && !syncedAt.has(name)) {
            syncedAt.set(name, performance.now());
            waiters.get(name)?.();
          }
        },
        () => {
          if (stopping) return;
          watchRestarts++;
          void startWatch();
        },
      );
    };
    await startWatch();
    cleanups.push(async () => {
      stopping = true;
      watch?.abort();
    });
    const policy = (name: string, i: number) => ({
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "GovernancePolicy",
      metadata: { name, namespace: NS },
      spec: {
        organizationRef: { name: "bench" },
        policyVersion: `v${i}`,
        thresholds: { financialApprovalUsd: 1000 + i },
        highRiskAgents: [`agent-${i}`],
      },
    });
    const synced = (name: string, timeoutMs = 30_000) =>
      new Promise<void>((resolve, reject) => {
        if (syncedAt.has(name)) return resolve();
        const timer = setTimeout(() => {
          policies
            .get(name, NS)
            .then((o) => JSON.stringify((o as { status?: unknown }).status ?? null))
            .catch((e: Error) => e.message)
            .then((status) =>
              reject(new Error(`${name} not Synced within ${timeoutMs} ms; status: ${status}`)),
            );
        }, timeoutMs);
        waiters.set(name, () => {
          clearTimeout(timer);
          resolve();
        });
      });

    // 1. Sequential reconcile latency and its baseline.
    const sequential: number[] = [];
    for (let i = 0; i < COUNT; i++) {
      const name = `seq-${i}`;
      const start = performance.now();
      await policies.create(policy(name, i), NS);
      await synced(name);
      sequential.push(syncedAt.get(name)! - start);
    }
    const baseline: number[] = [];
    for (let i = 0; i < COUNT; i++) {
      const start = performance.now();
      await k8sCreateConfigMap(custom, kc, i);
      const res = await fetch(`${serviceUrl}/v1/admin/organizations/bench/policies/baseline-${i}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({
          policy_version: `v${i}`,
          config: { financial_approval_threshold_usd: 1000 + i },
        }),
      });
      if (!res.ok) throw new Error(`baseline PUT: ${res.status}`);
      baseline.push(performance.now() - start);
    }

    // 2. Burst.
    const burstStart = performance.now();
    const names = Array.from({ length: COUNT }, (_, i) => `burst-${i}`);
    const created = new Map<string, number>();
    await Promise.all(
      names.map(async (name, i) => {
        created.set(name, performance.now());
        await policies.create(policy(name, i), NS);
      }),
    );
    await Promise.all(names.map((n) => synced(n, 120_000)));
    const burstTotal = performance.now() - burstStart;
    const burst = names.map((n) => syncedAt.get(n)! - created.get(n)!);

    // 3. Webhook: direct AdmissionReviews vs a no-op HTTPS server, then Pods via the API server.
    const review = JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: "bench",
        kind: { group: "", version: "v1", kind: "Pod" },
        namespace: NS,
        operation: "CREATE",
        object: {
          metadata: {
            name: "p",
            labels: { app: "bench-agent" },
            annotations: { "tollgate.dev/organization": "bench" },
          },
          spec: { containers: [{ name: "agent", image: "agent:1" }] },
        },
      },
    });
    await k(["label", "namespace", NS, "tollgate.dev/injection=enabled", "tollgate.dev/organization=bench"]);
    const webhookTimes = await postMany(
      `https://127.0.0.1:${operator.webhookPort}/mutate`,
      operator.caCert!,
      review,
      REVIEWS,
    );
    const noop = await startNoopHttps();
    cleanups.push(() => noop.close());
    const noopTimes = await postMany(noop.url, noop.ca, review, REVIEWS);

    await k(
      ["apply", "-f", "-"],
      JSON.stringify(
        sidecarInjectorConfiguration({
          target: { url: `https://127.0.0.1:${operator.webhookPort}/mutate` },
          operatorNamespace: "tollgate-system",
        }),
      ),
    );
    await k(["create", "namespace", "bench-plain"]);
    await waitForCaBundle(k);
    const podsInjected = await createPods(custom, kc, NS, PODS);
    const podsPlain = await createPods(custom, kc, "bench-plain", PODS);

    const result = {
      count: COUNT,
      reconcile: summary(sequential),
      reconcileBaseline: summary(baseline),
      burst: { ...summary(burst), totalMs: burstTotal },
      webhook: summary(webhookTimes),
      webhookBaseline: summary(noopTimes),
      podCreateInjected: summary(podsInjected),
      podCreatePlain: summary(podsPlain),
    };
    const line = (label: string, s: { p50: number; p99: number; n: number }) =>
      console.log(
        `${label.padEnd(44)} p50 ${ms(s.p50).padStart(10)}   p99 ${ms(s.p99).padStart(10)}   (n=${s.n})`,
      );
    console.log("");
    line("reconcile apply → Synced (one at a time)", result.reconcile);
    line("  baseline: API create + admin PUT", result.reconcileBaseline);
    console.log(
      `  ratio p50 ${(result.reconcile.p50 / result.reconcileBaseline.p50).toFixed(2)}x   target p99 ≤ 1000 ms: ${result.reconcile.p99 <= 1000 ? "met" : "MISSED"}`,
    );
    line(`reconcile burst of ${COUNT} (per resource)`, result.burst);
    console.log(`  all ${COUNT} Synced after ${ms(burstTotal)}`);
    line("webhook AdmissionReview over HTTPS", result.webhook);
    line("  baseline: no-op HTTPS server", result.webhookBaseline);
    console.log(
      `  ratio p99 ${(result.webhook.p99 / result.webhookBaseline.p99).toFixed(2)}x   target p99 ≤ 20 ms: ${result.webhook.p99 <= 20 ? "met" : "MISSED"}`,
    );
    line("Pod create via API server, injected", result.podCreateInjected);
    line("  baseline: Pod create, no webhook", result.podCreatePlain);
    console.log(`  ratio p99 ${(result.podCreateInjected.p99 / result.podCreatePlain.p99).toFixed(2)}x`);
    if (watchRestarts) console.log(`(the status watch reconnected ${watchRestarts} times)`);
    console.log(`RESULT ${JSON.stringify(result)}`);
    return 0;
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  }
}

/** Creates one ConfigMap through the API server (the baseline's Kubernetes round trip). */
async function k8sCreateConfigMap(
  _custom: unknown,
  kc: import("../../operator/kube/k8s.js").KubeConfig,
  i: number,
) {
  const { CoreV1Api } = await import("../../operator/kube/k8s.js");
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedConfigMap({
    namespace: NS,
    body: { metadata: { name: `baseline-${i}` }, data: { financialApprovalUsd: String(1000 + i) } },
  });
}

/** Creates `n` Pods one at a time through the API server; returns each request's latency (ms). */
async function createPods(
  _custom: unknown,
  kc: import("../../operator/kube/k8s.js").KubeConfig,
  namespace: string,
  n: number,
): Promise<number[]> {
  const { CoreV1Api } = await import("../../operator/kube/k8s.js");
  const core = kc.makeApiClient(CoreV1Api);
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    const pod = await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: `pod-${i}`, labels: { app: "bench-agent" } },
        spec: { containers: [{ name: "agent", image: "agent:1" }] },
      },
    });
    times.push(performance.now() - start);
    const injected = pod.spec?.containers.some((c) => c.name === "tollgate-sidecar");
    if (injected !== (namespace === NS)) throw new Error(`pod ${namespace}/pod-${i}: injection ${injected}`);
  }
  return times;
}

async function waitForCaBundle(k: (a: string[]) => Promise<string>) {
  for (let i = 0; i < 200; i++) {
    const c = JSON.parse(
      await k(["get", "mutatingwebhookconfiguration", "tollgate-sidecar-injector", "-o", "json"]),
    );
    if (c.webhooks.every((w: { clientConfig: { caBundle?: string } }) => w.clientConfig.caBundle)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("caBundle was not published");
}

/** POSTs `body` `n` times sequentially over one keep-alive HTTPS connection; latencies in ms. */
async function postMany(url: string, ca: string, body: string, n: number): Promise<number[]> {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca });
  const u = new URL(url);
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const start = performance.now();
      const req = https.request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname,
          method: "POST",
          agent,
          headers: { "content-type": "application/json" },
        },
        (res) => {
          res.resume();
          res.on("end", () =>
            res.statusCode === 200
              ? resolve(performance.now() - start)
              : reject(new Error(`HTTP ${res.statusCode}`)),
          );
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  for (let i = 0; i < 20; i++) await once(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < n; i++) times.push(await once());
  agent.destroy();
  return times;
}

/** A no-op HTTPS endpoint (same TLS setup as the webhook) answering a constant AdmissionReview. */
async function startNoopHttps() {
  const pki = await createWebhookPki(["127.0.0.1"]);
  const app = Fastify({ https: { cert: pki.cert, key: pki.key }, logger: false });
  app.post("/mutate", async () => ({
    apiVersion: "admission.k8s.io/v1",
    kind: "AdmissionReview",
    response: { uid: "bench", allowed: true },
  }));
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as { port: number };
  return { url: `https://127.0.0.1:${port}/mutate`, ca: pki.caCert, close: () => app.close() };
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`bench/operator failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
