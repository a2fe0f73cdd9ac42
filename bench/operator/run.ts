/**
 * bench/operator: how fast the operator turns a GovernancePolicy write into `Synced=True`, against
 * the floor every controller shares, measured in the same run: informer event delivery.
 *
 * Real parts, each in its own process as deployed: etcd + kube-apiserver (test/support/
 * controlplane.ts), the governance service on real PostgreSQL (bench/lib/parts.ts) and the
 * operator (`operator/main.ts`). This process writes the resources (node:https keep-alive) and
 * runs an informer on GovernancePolicies — the operator's own informer code — that timestamps,
 * per resource, from the moment the create request answered:
 *   delivery  the watch event announcing the resource (the baseline: the earliest any
 *             controller can learn of the write);
 *   Synced    the watch event carrying `Synced=True` at the resource's generation (what a user
 *             waiting on `kubectl wait --for=condition=Synced` sees).
 * Both are measured by the same observer from the same origin, so their ratio is the operator's
 * cost over the notification floor. An event processed before the create's response counts 0.
 *
 * Two load patterns per repeat: `--count` resources created one at a time (each waits for the
 * previous one's Synced), then `--count` created at once (a burst, e.g. `kubectl apply -f dir/`).
 * Target (issue 9): Synced p99 ≤ 2× delivery p99 and ≤ 1 s, for both patterns.
 *
 * A second baseline shows what any controller must spend: before the operator starts, this
 * process acts as the smallest possible controller on the same informer — on each resource's
 * watch event it sends the three writes a reconcile cannot avoid (a guarded JSON patch of the
 * metadata, the admin-API PUT, the status patch), as many resources at a time as the operator
 * has workers, with no queue, cache or framework — and times write → Synced the same way
 * ("controller floor").
 *
 *   npx tsx bench/operator/run.ts [--count 100] [--repeats 3] [--workers N] [--profile] [--quick]
 *
 * --quick: 10 resources, 1 repeat (the kube suite runs it for correctness). --profile: the
 * operator runs with --cpu-prof into bench/results/profiles/. Results go to
 * bench/results/operator.json and .md (bench/lib/report.ts). Exits 1 when a resource does not
 * converge; timings are reported, never gated.
 */
import { mkdirSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { DEFAULT_WORKERS } from "../../operator/config.js";
import { policyBody } from "../../operator/controllers/governancepolicy/mapping.js";
import { nextStatus } from "../../operator/controllers/runtime/conditions.js";
import { managedBy, serviceName } from "../../operator/controllers/shared/mapping.js";
import { type GovernancePolicySpec, KINDS } from "../../operator/crds/schema.js";
import { startInformer } from "../../operator/kube/informer.js";
import { createOperatorLogger } from "../../operator/log.js";
import { benchClient } from "../lib/http.js";
import {
  apiClient,
  cpuByPart,
  metricSum,
  type ProcStat,
  percentile,
  startKubeBench,
  startOperatorProcess,
} from "../lib/kube.js";
import { repoRoot, startDatabase, startServiceProcess, teardown } from "../lib/parts.js";
import { progress, report } from "../lib/report.js";
import { median, type ResultRow, spreadPct } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    count: { type: "string" },
    repeats: { type: "string" },
    workers: { type: "string" },
    profile: { type: "boolean", default: false },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const COUNT = Number(args.count ?? (quick ? 10 : 100));
const REPEATS = Number(args.repeats ?? (quick ? 1 : 3));
const WORKERS = args.workers === undefined ? DEFAULT_WORKERS : Number(args.workers);
const TARGET_RATIO = 2;
const TARGET_P99_MS = 1000;
const NS = "bench";
/** Namespace and service organization of the controller-floor resources. */
const FLOOR = "bench-floor";
const GROUP_PATH = "/apis/tollgate.dev/v1alpha1";

interface PolicyObject {
  metadata: {
    name: string;
    namespace?: string;
    generation?: number;
    resourceVersion?: string;
    finalizers?: string[];
  };
  spec?: unknown;
  status?: {
    observedGeneration?: number;
    conditions?: Array<{ type: string; status: string; observedGeneration?: number }>;
  };
}

/** Timestamps (performance.now(), ms) of one resource as this process saw it. */
interface Seen {
  answered?: number;
  delivered?: number;
  finalized?: number;
  synced?: number;
}

const isSynced = (o: PolicyObject) =>
  o.status?.observedGeneration === o.metadata.generation &&
  (o.status?.conditions ?? []).some(
    (c) => c.type === "Synced" && c.status === "True" && c.observedGeneration === o.metadata.generation,
  );

/** p50/p99 of one phase: delivery, Synced and the finalizer's arrival, from the create's answer (ms). */
function phaseFigures(names: string[], seen: Map<string, Seen>) {
  const since = (key: keyof Seen) =>
    names.map((n) => {
      const s = seen.get(n)!;
      return Math.max(0, s[key]! - s.answered!);
    });
  const delivery = since("delivered");
  const synced = since("synced");
  const finalized = since("finalized");
  return {
    deliveryP50: percentile(delivery, 50),
    deliveryP99: percentile(delivery, 99),
    syncedP50: percentile(synced, 50),
    syncedP99: percentile(synced, 99),
    finalizerP50: percentile(finalized, 50),
    finalizerP99: percentile(finalized, 99),
  };
}
type PhaseFigures = ReturnType<typeof phaseFigures>;
/** Figures of one repeat: both patterns, how long the whole burst took, CPU ms per resource by process. */
interface Repeat {
  sequential: PhaseFigures;
  burst: PhaseFigures;
  burstAllMs: number;
  cpuMsPerResource: { sequential: Record<string, number>; burst: Record<string, number> };
}

/** CPU used between two {@link cpuByPart} snapshots, per resource (ms). */
const cpuPerResource = (before: Record<string, number>, after: Record<string, number>, n: number) =>
  Object.fromEntries(Object.keys(after).map((k) => [k, (after[k]! - (before[k] ?? 0)) / n]));

async function main(): Promise<number> {
  const t0 = Date.now();
  const stops = teardown();
  try {
    const kube = await startKubeBench();
    stops.push(() => kube.stop());
    const db = await startDatabase(["tollgate"]);
    stops.push(() => db.stop());
    const svc = await startServiceProcess(db.urlOf("tollgate"));
    stops.push(() => svc.stop());
    const api = apiClient(kube.cp, COUNT);
    stops.push(async () => api.close());
    const service = benchClient(svc.url, COUNT);
    stops.push(async () => service.close());

    const collection = (plural: string, namespace?: string) =>
      namespace ? `${GROUP_PATH}/namespaces/${namespace}/${plural}` : `${GROUP_PATH}/${plural}`;
    const create = async (plural: string, body: unknown, namespace?: string) => {
      const r = await api.request("POST", collection(plural, namespace), body);
      if (r.status !== 201) throw new Error(`create ${plural}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    };
    const jsonPatch = async (p: string, patch: unknown) => {
      const r = await api.request("PATCH", p, patch, "application/json-patch+json");
      if (r.status !== 200) throw new Error(`PATCH ${p}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    };
    await kube.k(["create", "namespace", NS]);
    await kube.k(["create", "namespace", FLOOR]);

    // The observer: the operator's informer code, in this process.
    const seen = new Map<string, Seen>();
    const latest = new Map<string, PolicyObject>();
    const waiters = new Map<string, () => void>();
    const wake = (name: string, stage: keyof Seen) => waiters.get(`${name}/${stage}`)?.();
    const observe = (o: PolicyObject) => {
      const now = performance.now();
      const name = o.metadata.name;
      const s = seen.get(name);
      if (!s) return; // not one of this run's writes
      latest.set(name, o);
      if (s.delivered === undefined) {
        s.delivered = now;
        wake(name, "delivered");
      }
      if (s.finalized === undefined && o.metadata.finalizers?.includes("tollgate.dev/finalizer"))
        s.finalized = now;
      if (s.synced === undefined && isSynced(o)) {
        s.finalized ??= now;
        s.synced = now;
        wake(name, "synced");
      }
    };
    const until = (name: string, stage: keyof Seen, timeoutMs: number) =>
      new Promise<void>((resolve, reject) => {
        if (seen.get(name)?.[stage] !== undefined) return resolve();
        const timer = setTimeout(() => {
          waiters.delete(`${name}/${stage}`);
          reject(new Error(`${name}: not ${stage} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.set(`${name}/${stage}`, () => {
          clearTimeout(timer);
          waiters.delete(`${name}/${stage}`);
          resolve();
        });
      });
    // Its list goes through this process's own client, so the observer shares no request code
    // with the operator under test.
    const kc = new KubeConfig();
    kc.loadFromFile(kube.cp.kubeconfigPath);
    const informer = startInformer<PolicyObject>({
      kc,
      path: `${GROUP_PATH}/governancepolicies`,
      list: async () => {
        const r = await api.request("GET", `${GROUP_PATH}/governancepolicies`);
        if (r.status !== 200) throw new Error(`list governancepolicies: HTTP ${r.status}`);
        return r.body;
      },
      log: createOperatorLogger({ level: "warn" }),
      onAdd: observe,
      onUpdate: observe,
    });
    stops.push(() => informer.stop());
    await informer.synced;

    const policy = (name: string, namespace: string, i: number) => ({
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "GovernancePolicy",
      metadata: { name, namespace },
      spec: {
        organizationRef: { name: "bench" },
        policyVersion: `v${i}`,
        thresholds: { financialApprovalUsd: 1000 + i },
        highRiskAgents: [`agent-${i}`],
      },
    });
    /** Creates one policy and records when the API server answered; resolves when it is Synced. */
    const write = async (name: string, namespace: string, i: number, timeoutMs: number) => {
      seen.set(name, {});
      const synced = until(name, "synced", timeoutMs);
      synced.catch(() => undefined); // awaited below; a rejection before then is not unhandled
      await create("governancepolicies", policy(name, namespace, i), namespace);
      seen.get(name)!.answered = performance.now();
      return synced;
    };

    /**
     * The controller floor's reconcile of one resource, started by its watch event: the writes
     * the operator makes for a new resource, back to back (no queue, no cache, no retries).
     */
    const floorReconcile = async (name: string) => {
      const obj = latest.get(name)!;
      const objPath = `${collection("governancepolicies", FLOOR)}/${name}`;
      await jsonPatch(objPath, [
        { op: "test", path: "/metadata/resourceVersion", value: obj.metadata.resourceVersion },
        { op: "add", path: "/metadata/annotations", value: { "bench.tollgate.dev/floor": "applied" } },
      ]);
      const spec = KINDS.GovernancePolicy.spec.parse(obj.spec) as GovernancePolicySpec;
      const put = await service.request(
        "PUT",
        `/v1/admin/organizations/${FLOOR}/policies/${encodeURIComponent(serviceName(obj.metadata))}`,
        { authorization: `Bearer ${svc.adminToken}` },
        JSON.stringify(policyBody(spec, managedBy(obj.metadata))),
      );
      if (put.status !== 200) throw new Error(`floor PUT: HTTP ${put.status} ${put.body}`);
      const { version } = JSON.parse(put.body) as { version: string };
      const status = nextStatus(
        undefined,
        obj.metadata.generation ?? 0,
        { kind: "synced", message: `applied (version ${version})`, fields: { serviceVersion: version } },
        new Date(),
      );
      await jsonPatch(`${objPath}/status`, [{ op: "add", path: "/status", value: status }]);
    };
    // As many reconciles at a time as the operator has workers (unbounded, 100 concurrent chains
    // overloaded the API server and were slower).
    let running = 0;
    const slots: Array<() => void> = [];
    const floorWrite = async (name: string, i: number, timeoutMs: number) => {
      const synced = write(name, FLOOR, i, timeoutMs);
      await until(name, "delivered", timeoutMs);
      if (running < WORKERS) running++;
      else await new Promise<void>((r) => slots.push(r)); // the releaser hands its slot over
      try {
        await floorReconcile(name);
      } finally {
        const next = slots.shift();
        if (next) next();
        else running--;
      }
      await synced;
    };

    // Where the CPU goes, by process (the operator's pid is known once it runs).
    let operatorPid = -1;
    const parts: Array<[string, (p: ProcStat, parent: ProcStat | undefined) => boolean]> = [
      ["kube-apiserver", (p) => p.cmdline.includes("kube-apiserver") && p.cmdline.includes(kube.cp.dir)],
      ["etcd", (p) => p.cmdline.includes(kube.cp.dir) && p.cmdline.includes("/etcd ")],
      ["operator", (p) => p.pid === operatorPid],
      ["service", (p) => p.pid === svc.proc.pid],
      [
        "postgres",
        (p, parent) => p.cmdline.includes(db.socketDir) || (parent?.cmdline.includes(db.socketDir) ?? false),
      ],
      ["bench", (p) => p.pid === process.pid],
    ];

    /** One pattern after the other: one at a time, then a burst; figures of each. */
    const runPatterns = async (
      prefix: string,
      one: (name: string, i: number, timeoutMs: number) => Promise<void>,
    ): Promise<Repeat> => {
      const cpu0 = cpuByPart(parts);
      const seqNames = Array.from({ length: COUNT }, (_, i) => `${prefix}-seq-${i}`);
      for (const [i, name] of seqNames.entries()) await one(name, i, 30_000);
      await new Promise((res) => setTimeout(res, 1000)); // let Events and the like drain
      const cpu1 = cpuByPart(parts);
      const burstNames = Array.from({ length: COUNT }, (_, i) => `${prefix}-burst-${i}`);
      const start = performance.now();
      await Promise.all(burstNames.map((name, i) => one(name, i, 120_000)));
      const burstAllMs = performance.now() - start;
      await new Promise((res) => setTimeout(res, 1000));
      const cpu2 = cpuByPart(parts);
      return {
        sequential: phaseFigures(seqNames, seen),
        burst: phaseFigures(burstNames, seen),
        burstAllMs,
        cpuMsPerResource: {
          sequential: cpuPerResource(cpu0, cpu1, COUNT),
          burst: cpuPerResource(cpu1, cpu2, COUNT),
        },
      };
    };
    const describe = (what: string, r: number, x: Repeat) => {
      progress(
        `${what} ${r + 1}/${REPEATS}: one at a time Synced p99 ${x.sequential.syncedP99.toFixed(1)} ms (delivery ${x.sequential.deliveryP99.toFixed(1)} ms); burst Synced p99 ${x.burst.syncedP99.toFixed(1)} ms (delivery ${x.burst.deliveryP99.toFixed(1)} ms), all after ${x.burstAllMs.toFixed(0)} ms`,
      );
      const cpu = Object.entries(x.cpuMsPerResource.burst)
        .map(([k, v]) => `${k} ${v.toFixed(1)}`)
        .join(", ");
      progress(`  burst CPU ms per resource: ${cpu}`);
    };

    // 1. The controller floor, before the operator exists; its resources are deleted afterwards.
    const putOrg = await service.request(
      "PUT",
      `/v1/admin/organizations/${FLOOR}`,
      { authorization: `Bearer ${svc.adminToken}` },
      "{}",
    );
    if (putOrg.status !== 200 && putOrg.status !== 201) throw new Error(`floor org: HTTP ${putOrg.status}`);
    const floor: Repeat[] = [];
    for (let r = 0; r < REPEATS; r++) {
      floor.push(await runPatterns(`floor-${r}`, floorWrite));
      describe("controller floor", r, floor[r]!);
    }
    const del = await api.request("DELETE", collection("governancepolicies", FLOOR));
    if (del.status !== 200) throw new Error(`deleting the floor's resources: HTTP ${del.status}`);

    // 2. The operator.
    const profileDir = args.profile ? path.join(repoRoot, "bench/results/profiles") : null;
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    const operator = await startOperatorProcess({
      cp: kube.cp,
      serviceUrl: svc.url,
      adminToken: svc.adminToken,
      workers: WORKERS,
      profileDir,
    });
    stops.push(() => operator.stop());
    operatorPid = operator.proc.pid ?? -1;
    await create("organizations", {
      apiVersion: "tollgate.dev/v1alpha1",
      kind: "Organization",
      metadata: { name: "bench" },
      spec: { slug: "bench" },
    });
    for (let i = 0; ; i++) {
      const org = (await api.request("GET", `${GROUP_PATH}/organizations/bench`)).body as PolicyObject;
      if (isSynced(org)) break;
      if (i > 600) throw new Error("Organization bench did not sync within 60 s");
      await new Promise((r) => setTimeout(r, 100));
    }
    progress(`operator: ready after ${Date.now() - t0} ms; ${REPEATS} repeats × ${COUNT} resources`);
    const repeats: Repeat[] = [];
    for (let r = 0; r < REPEATS; r++) {
      repeats.push(await runPatterns(`r${r}`, (name, i, timeoutMs) => write(name, NS, i, timeoutMs)));
      describe("operator", r, repeats[r]!);
    }

    const metrics = await operator.metrics();
    const resources = REPEATS * COUNT * 2;
    const reconciles = metricSum(metrics, "tollgate_operator_reconciles_total", 'kind="GovernancePolicy"');

    const rows: ResultRow[] = [];
    const phases = [
      ["one at a time", "sequential"],
      [`burst of ${COUNT}`, "burst"],
    ] as const;
    const row = (
      figure: string,
      values: number[],
      baseline: string,
      baselineValues: number[] | null,
      target: string,
      met: (value: number, ratio: number | null) => boolean | null,
    ): ResultRow => {
      const value = median(values);
      const baselineValue = baselineValues ? median(baselineValues) : null;
      const ratio = baselineValue ? value / baselineValue : null;
      return {
        benchmark: "operator",
        figure,
        value,
        unit: "ms",
        baseline,
        baselineValue,
        ratio,
        better: "lower",
        target,
        met: met(value, ratio),
        spreadPct: spreadPct(values),
        repeats: REPEATS,
      };
    };
    for (const [label, key] of phases) {
      const synced = repeats.map((x) => x[key].syncedP99);
      rows.push(
        row(
          `${label}: write → Synced p99`,
          synced,
          "informer event delivery p99",
          repeats.map((x) => x[key].deliveryP99),
          `≤ ${TARGET_RATIO}× and ≤ ${TARGET_P99_MS} ms`,
          (value, ratio) => ratio !== null && ratio <= TARGET_RATIO && value <= TARGET_P99_MS,
        ),
        row(
          `${label}: write → Synced p99`,
          synced,
          "controller floor p99",
          floor.map((x) => x[key].syncedP99),
          "—",
          () => null,
        ),
        row(
          `${label}: write → Synced p50`,
          repeats.map((x) => x[key].syncedP50),
          "controller floor p50",
          floor.map((x) => x[key].syncedP50),
          "—",
          () => null,
        ),
      );
    }
    rows.push(
      row(
        `burst of ${COUNT}: all Synced after`,
        repeats.map((x) => x.burstAllMs),
        "controller floor",
        floor.map((x) => x.burstAllMs),
        "—",
        () => null,
      ),
    );
    report("operator", rows, {
      count: COUNT,
      workers: WORKERS,
      repeats,
      floor,
      reconcilesPerResource: reconciles / resources,
      setupMs: Date.now() - t0,
    });
    process.stdout.write(
      `\nGovernancePolicy reconciles per resource: ${(reconciles / resources).toFixed(2)} (${reconciles} for ${resources})\n`,
    );
    return 0;
  } finally {
    await stops.stopAll();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`bench/operator failed: ${(err as Error).stack ?? err}`);
    process.exit(1);
  },
);
