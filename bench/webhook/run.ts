/**
 * bench/webhook: what the sidecar-injecting admission webhook adds to Pod creation.
 *
 * Real parts, each in its own process as deployed: etcd + kube-apiserver (test/support/
 * controlplane.ts) and the operator (`operator/main.ts`), whose HTTPS webhook is registered with
 * the MutatingWebhookConfiguration the chart installs (operator/webhook/configuration.ts, with a
 * `url:`; the operator publishes its CA as the caBundle). This process creates Pods through the
 * API server with `--clients` concurrent clients (node:https keep-alive, one connection each):
 *   injected  in a namespace labelled tollgate.dev/injection=enabled: the API server calls the
 *             webhook and applies its patch (sidecar container, API-key volume);
 *   plain     in an unlabelled namespace: the same Pod, and the configuration's namespaceSelector
 *             and matchConditions keep the webhook out of the call (the baseline);
 *   minimal   in a third namespace whose webhook is bench/webhook/minimal-server.ts (own process,
 *             HTTPS/1.1 like the operator's, same patch, nothing else): what any mutating webhook costs, so
 *             injected vs minimal is the share of Tollgate's own code.
 * No kubelet runs, so Pods stay Pending; every round deletes its Pods before the next. The order
 * of the kinds rotates per repeat so drift hits all alike; each repeat gives one p50/p99 of each,
 * and the figures are medians over repeats with their spread.
 * Target (issue 9): injected p99 ≤ 1.2× plain p99, at 50 concurrent clients.
 *
 * The API server's own view of the webhook call (apiserver_admission_webhook_admission_duration_
 * seconds) and the webhook's (tollgate_operator_webhook_admission_duration_seconds) are reported
 * as means, with CPU ms per Pod by process, to show where added time goes.
 *
 *   npx tsx bench/webhook/run.ts [--pods 500] [--clients 50] [--repeats 3] [--profile] [--quick]
 *
 * --quick: 40 Pods, 10 clients, 1 repeat (the kube suite runs it for correctness). --profile: the
 * operator runs with --cpu-prof into bench/results/profiles/. Results go to
 * bench/results/webhook.json and .md. Exits 1 when a Pod is injected where it should not be or
 * the reverse; timings are reported, never gated.
 */
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { createWebhookPki } from "../../operator/webhook/certs.js";
import { sidecarInjectorConfiguration } from "../../operator/webhook/configuration.js";
import { buildInjection } from "../../operator/webhook/patch.js";
import { SIDECAR_CONTAINER } from "../../operator/webhook/sidecar.js";
import { freePorts } from "../../test/support/controlplane.js";
import {
  type ApiClient,
  apiClient,
  cpuByPart,
  metricSum,
  OPERATOR_NAMESPACE,
  type ProcStat,
  percentile,
  startKubeBench,
  startOperatorProcess,
} from "../lib/kube.js";
import { repoRoot, teardown } from "../lib/parts.js";
import { progress, report } from "../lib/report.js";
import { median, type ResultRow, spreadPct } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    pods: { type: "string" },
    clients: { type: "string" },
    repeats: { type: "string" },
    profile: { type: "boolean", default: false },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const PODS = Number(args.pods ?? (quick ? 40 : 500));
const CLIENTS = Number(args.clients ?? (quick ? 10 : 50));
const REPEATS = Number(args.repeats ?? (quick ? 1 : 3));
const WARMUP = quick ? 10 : 100;
const TARGET_RATIO = 1.2;
const WEBHOOK = "namespaces.sidecar.tollgate.dev";
const MINIMAL_LABEL = "bench.tollgate.dev/minimal-webhook";
const SIDECAR_IMAGE = "ghcr.io/tollgate/sidecar:bench";

const KINDS = ["plain", "injected", "minimal"] as const;
type Kind = (typeof KINDS)[number];
const namespaceOf: Record<Kind, string> = {
  plain: "bench-plain",
  injected: "bench-injected",
  minimal: "bench-minimal",
};

/** The Pod every client creates: the same body in both namespaces. */
const pod = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: {
    name,
    labels: { app: "bench-agent" },
    annotations: { "tollgate.dev/organization": "bench" },
  },
  spec: { containers: [{ name: "agent", image: "registry.example/agent:1" }] },
});

/**
 * Creates `n` Pods in `namespace` with `clients` concurrent clients; returns each create's
 * latency (ms) and the wall time. Throws when a Pod's injection differs from `expectInjected`.
 */
async function createPods(
  api: ApiClient,
  namespace: string,
  prefix: string,
  n: number,
  clients: number,
  expectInjected: boolean,
): Promise<{ latencies: number[]; wallMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const start = performance.now();
  const client = async () => {
    for (let i = next++; i < n; i = next++) {
      const t = performance.now();
      const r = await api.request("POST", `/api/v1/namespaces/${namespace}/pods`, pod(`${prefix}-${i}`));
      latencies.push(performance.now() - t);
      if (r.status !== 201)
        throw new Error(`create pod in ${namespace}: HTTP ${r.status} ${r.body?.message}`);
      const injected = (r.body.spec.containers as Array<{ name: string }>).some(
        (c) => c.name === SIDECAR_CONTAINER,
      );
      if (injected !== expectInjected)
        throw new Error(`pod ${namespace}/${prefix}-${i}: injected=${injected}, expected ${expectInjected}`);
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return { latencies, wallMs: performance.now() - start };
}

/** Deletes every Pod of `namespace` and waits until none is left (unscheduled Pods go at once). */
async function deletePods(api: ApiClient, namespace: string): Promise<void> {
  const r = await api.request("DELETE", `/api/v1/namespaces/${namespace}/pods`);
  if (r.status !== 200) throw new Error(`delete pods in ${namespace}: HTTP ${r.status}`);
  for (let i = 0; ; i++) {
    const list = await api.request("GET", `/api/v1/namespaces/${namespace}/pods?limit=1`);
    if (list.body.items.length === 0) return;
    if (i > 300) throw new Error(`pods of ${namespace} not deleted after 30 s`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** Sum and count of a histogram in the API server's /metrics, for the samples containing `labels`. */
function histogram(text: string, name: string, labels: string) {
  return { sum: metricSum(text, `${name}_sum`, labels), count: metricSum(text, `${name}_count`, labels) };
}

/** Starts bench/webhook/minimal-server.ts answering with `patch`; resolves with its port and a stop. */
async function startMinimalWebhook(tls: { cert: string; key: string }, patch: unknown) {
  const proc = spawn(process.execPath, ["--import", "tsx", "bench/webhook/minimal-server.ts"], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? "",
      MINIMAL_WEBHOOK_CERT: tls.cert,
      MINIMAL_WEBHOOK_KEY: tls.key,
      MINIMAL_WEBHOOK_PATCH: Buffer.from(JSON.stringify(patch)).toString("base64"),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((r) => proc.once("exit", () => r()));
  let stderr = "";
  proc.stderr!.on("data", (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (d) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.once("exit", () => reject(new Error(`minimal webhook exited:\n${stderr}`)));
  });
  return {
    port,
    pid: proc.pid ?? -1,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      await exited;
    },
  };
}

/** One repeat's figures of one kind. */
interface KindFigures {
  p50: number;
  p99: number;
  podsPerSecond: number;
  cpuMsPerPod: Record<string, number>;
}

async function main(): Promise<number> {
  const t0 = Date.now();
  const stops = teardown();
  try {
    const kube = await startKubeBench();
    stops.push(() => kube.stop());
    const profileDir = args.profile ? path.join(repoRoot, "bench/results/profiles") : null;
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    // The webhook needs no governance service: nothing here creates Tollgate resources, so the
    // operator's reconcilers never call it (its URL points at a closed port).
    const [closedPort] = await freePorts(1);
    const operator = await startOperatorProcess({
      cp: kube.cp,
      serviceUrl: `http://127.0.0.1:${closedPort}`,
      adminToken: "unused",
      profileDir,
    });
    stops.push(() => operator.stop());
    const api = apiClient(kube.cp, CLIENTS);
    stops.push(async () => api.close());

    // The minimal webhook answers with the patch the operator builds for this Pod in this setup.
    const decision = buildInjection(
      pod("any"),
      { name: namespaceOf.injected, labels: { "tollgate.dev/injection": "enabled" } },
      // apiKey, as the operator under test (bench/lib/kube.ts: this control plane has no ServiceAccount admission).
      {
        image: SIDECAR_IMAGE,
        serviceUrl: `http://127.0.0.1:${closedPort}`,
        mode: "container",
        auth: "apiKey",
      },
    );
    if (decision.kind !== "inject")
      throw new Error(`the benchmark Pod would not be injected: ${decision.kind}`);
    const minimalPki = await createWebhookPki(["127.0.0.1"]);
    const minimal = await startMinimalWebhook(minimalPki, decision.patch);
    stops.push(() => minimal.stop());

    await kube.k(["create", "namespace", namespaceOf.plain]);
    await kube.k(["create", "namespace", namespaceOf.injected]);
    await kube.k(["label", "namespace", namespaceOf.injected, "tollgate.dev/injection=enabled"]);
    await kube.k(["create", "namespace", namespaceOf.minimal]);
    await kube.k(["label", "namespace", namespaceOf.minimal, `${MINIMAL_LABEL}=enabled`]);
    const tollgate = sidecarInjectorConfiguration({
      target: { url: `https://127.0.0.1:${operator.webhookPort}/mutate` },
      operatorNamespace: OPERATOR_NAMESPACE,
    });
    // The same webhook definition (rules, matchConditions, timeout), aimed at the minimal server.
    const [first] = sidecarInjectorConfiguration({
      target: { url: `https://127.0.0.1:${minimal.port}/mutate` },
      operatorNamespace: OPERATOR_NAMESPACE,
      caPem: minimalPki.caCert,
    }).webhooks as Array<Record<string, unknown>>;
    const minimalConfig = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "MutatingWebhookConfiguration",
      metadata: { name: "bench-minimal-webhook" },
      webhooks: [
        {
          ...first,
          name: "minimal.bench.tollgate.dev",
          namespaceSelector: { matchLabels: { [MINIMAL_LABEL]: "enabled" } },
        },
      ],
    };
    await kube.k(["apply", "-f", "-"], [tollgate, minimalConfig].map((o) => JSON.stringify(o)).join("\n"));
    // The operator publishes its CA; the API server then needs a moment to load the configuration.
    for (const kind of ["injected", "minimal"] as const) {
      for (let i = 0; ; i++) {
        const probe = await api.request(
          "POST",
          `/api/v1/namespaces/${namespaceOf[kind]}/pods`,
          pod(`probe-${i}`),
        );
        const injected =
          probe.status === 201 &&
          (probe.body.spec.containers as Array<{ name: string }>).some((c) => c.name === SIDECAR_CONTAINER);
        if (injected) break;
        if (i > 300) throw new Error(`the ${kind} webhook never injected a probe Pod: HTTP ${probe.status}`);
        await new Promise((res) => setTimeout(res, 100));
      }
      await deletePods(api, namespaceOf[kind]);
    }
    for (const kind of KINDS) {
      await createPods(api, namespaceOf[kind], "warmup", WARMUP, CLIENTS, kind !== "plain");
      await deletePods(api, namespaceOf[kind]);
    }
    progress(
      `webhook: ready after ${Date.now() - t0} ms; ${REPEATS} repeats × ${PODS} Pods each way, ${CLIENTS} concurrent clients`,
    );

    const parts: Array<[string, (p: ProcStat) => boolean]> = [
      ["kube-apiserver", (p) => p.cmdline.includes("kube-apiserver") && p.cmdline.includes(kube.cp.dir)],
      ["etcd", (p) => p.cmdline.includes(kube.cp.dir) && p.cmdline.includes("/etcd ")],
      ["operator", (p) => p.pid === operator.proc.pid],
      ["minimal webhook", (p) => p.pid === minimal.pid],
      ["bench", (p) => p.pid === process.pid],
    ];
    const apiserverMetrics = async () => (await api.request("GET", "/metrics")).text;

    const repeats: Array<Record<Kind, KindFigures>> = [];
    const callMs = { apiserver: { sum: 0, count: 0 }, webhook: { sum: 0, count: 0 } };
    for (let r = 0; r < REPEATS; r++) {
      const order = KINDS.map((_, i) => KINDS[(i + r) % KINDS.length]!);
      const figures = {} as Record<Kind, KindFigures>;
      for (const kind of order) {
        const before = cpuByPart(parts);
        const apiBefore = histogram(
          await apiserverMetrics(),
          "apiserver_admission_webhook_admission_duration_seconds",
          `name="${WEBHOOK}"`,
        );
        const hookBefore = histogram(
          await operator.metrics(),
          "tollgate_operator_webhook_admission_duration_seconds",
          "",
        );
        const { latencies, wallMs } = await createPods(
          api,
          namespaceOf[kind],
          `r${r}`,
          PODS,
          CLIENTS,
          kind !== "plain",
        );
        const after = cpuByPart(parts);
        if (kind === "injected") {
          const apiAfter = histogram(
            await apiserverMetrics(),
            "apiserver_admission_webhook_admission_duration_seconds",
            `name="${WEBHOOK}"`,
          );
          const hookAfter = histogram(
            await operator.metrics(),
            "tollgate_operator_webhook_admission_duration_seconds",
            "",
          );
          callMs.apiserver.sum += apiAfter.sum - apiBefore.sum;
          callMs.apiserver.count += apiAfter.count - apiBefore.count;
          callMs.webhook.sum += hookAfter.sum - hookBefore.sum;
          callMs.webhook.count += hookAfter.count - hookBefore.count;
        }
        figures[kind] = {
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
          podsPerSecond: (PODS / wallMs) * 1000,
          cpuMsPerPod: Object.fromEntries(
            Object.keys(after).map((k) => [k, (after[k]! - before[k]!) / PODS]),
          ),
        };
        await deletePods(api, namespaceOf[kind]);
      }
      repeats.push(figures);
      const cpu = (k: Kind) =>
        Object.entries(figures[k].cpuMsPerPod)
          .map(([p, v]) => `${p} ${v.toFixed(2)}`)
          .join(", ");
      progress(
        `repeat ${r + 1}/${REPEATS}: ${KINDS.map((k) => `${k} p50 ${figures[k].p50.toFixed(1)} p99 ${figures[k].p99.toFixed(1)} ms`).join("; ")}; ratio p99 ${(figures.injected.p99 / figures.plain.p99).toFixed(2)}`,
      );
      for (const k of KINDS) progress(`  CPU ms per Pod, ${k}: ${cpu(k)}`);
    }

    const rows: ResultRow[] = [];
    const label: Record<Kind, string> = {
      plain: "without the webhook",
      injected: "with injection",
      minimal: "through the minimal webhook",
    };
    const compare = (kind: Kind, base: Kind, p: "p50" | "p99", target: boolean): ResultRow => {
      const value = median(repeats.map((x) => x[kind][p]));
      const baselineValue = median(repeats.map((x) => x[base][p]));
      const ratio = value / baselineValue;
      return {
        benchmark: "webhook",
        figure: `Pod create ${p}, ${CLIENTS} concurrent, ${label[kind]}`,
        value,
        unit: "ms",
        baseline: `Pod create ${p} ${label[base]}`,
        baselineValue,
        ratio,
        better: "lower",
        target: target ? `≤ ${TARGET_RATIO}×` : "—",
        met: target ? ratio <= TARGET_RATIO : null,
        spreadPct: spreadPct(repeats.map((x) => x[kind][p])),
        repeats: REPEATS,
      };
    };
    rows.push(
      compare("injected", "plain", "p99", true),
      compare("injected", "plain", "p50", false),
      compare("minimal", "plain", "p99", false),
      compare("injected", "minimal", "p99", false),
    );
    const rate = median(repeats.map((x) => x.injected.podsPerSecond));
    const rateBase = median(repeats.map((x) => x.plain.podsPerSecond));
    rows.push({
      benchmark: "webhook",
      figure: `Pods created per second, ${CLIENTS} concurrent, with injection`,
      value: rate,
      unit: "Pods/s",
      baseline: "without the webhook",
      baselineValue: rateBase,
      ratio: rate / rateBase,
      better: "higher",
      target: "—",
      met: null,
      spreadPct: spreadPct(repeats.map((x) => x.injected.podsPerSecond)),
      repeats: REPEATS,
    });
    const mean = (h: { sum: number; count: number }) => (h.count ? (h.sum / h.count) * 1000 : Number.NaN);
    report("webhook", rows, {
      pods: PODS,
      clients: CLIENTS,
      repeats,
      webhookCallMeanMs: { apiserver: mean(callMs.apiserver), webhookServer: mean(callMs.webhook) },
      setupMs: Date.now() - t0,
    });
    process.stdout.write(
      `\nwebhook call, mean: ${mean(callMs.apiserver).toFixed(2)} ms as the API server sees it, ${mean(callMs.webhook).toFixed(2)} ms inside the webhook server\n`,
    );
    return 0;
  } finally {
    await stops.stopAll();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`bench/webhook failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
