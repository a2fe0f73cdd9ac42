/**
 * bench/cluster: Tollgate in a real kind cluster (real kubelet, containerd, CoreDNS, kube-proxy),
 * installed by the chart with the images built from ./Dockerfile (bench/cluster/cluster.ts).
 *
 *  1. A governed tool call, pod to pod: inside an agent pod whose sidecar the webhook injected,
 *     bench/cluster/load.mjs times the same JSON tool call made directly to the tool's Service
 *     (an HTTP echo in its own pod) and through the sidecar's gRPC Invoke (the service, in its
 *     own pod on PostgreSQL in the cluster, decides and records; the sidecar forwards to the same
 *     Service), interleaved call by call, --gap-ms apart, --calls pairs per round, with two floors
 *     beside them: the minimal relay (Node.js) and the Go relay (bench/sidecar-overhead/go-relay,
 *     ADR 0011), each a container of the agent pod doing the same hops. Rows: p50 and p99 of
 *     each (ratio to direct) and the added p50/p99.
 *  2. Pod creation with injection: --pods pods in the namespace labelled for injection and as
 *     many in an unlabelled one, --concurrency at a time, batches alternating. Rows: p50/p99 of
 *     admission (create → API response) and of create → Ready, ratio injected/plain.
 * Figures are medians over --rounds (tool calls: rounds of the load; pods: pairs of batches),
 * with their spread.
 *
 * The cluster: by default its own, `tollgate-bench`, created like the `cluster` test project's
 * (scripts/kind-up.sh with the cached node image, images and test images) and deleted at the
 * end; TOLLGATE_BENCH_CLUSTER=<name> reuses a running cluster (TOLLGATE_TEST_IMAGE_TAG: the tag
 * of the images loaded there, default cluster-test) and removes only what the benchmark added.
 * Either way teardown runs on success, failure and SIGINT/SIGTERM/SIGHUP (bench/lib/parts.ts).
 * All traffic stays inside this machine: the load runs in the agent pod (kubectl exec), pod
 * creation goes to the cluster's API server on 127.0.0.1.
 *
 *   npx tsx bench/cluster/run.ts [--calls 300] [--rounds 3] [--gap-ms 10] [--pods 30]
 *     [--concurrency 3] [--quick] [--help]
 *
 * --quick: a few calls and pods, for correctness (test/cluster/bench.test.ts runs it).
 */
import "./env.js";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { CreateSample } from "./pod-create.js";

const { values: args } = parseArgs({
  options: {
    calls: { type: "string" },
    rounds: { type: "string" },
    "gap-ms": { type: "string", default: "10" },
    pods: { type: "string" },
    concurrency: { type: "string" },
    quick: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  const doc = /\/\*\*([\s\S]*?)\*\//.exec(readFileSync(import.meta.filename, "utf8"))!;
  process.stdout.write(`${doc[1]!.replace(/^ \* ?/gm, "").trim()}\n`);
  process.exit(0);
}
const quick = args.quick!;
const CALLS = Number(args.calls ?? (quick ? 30 : 300));
const ROUNDS = Number(args.rounds ?? (quick ? 1 : 3));
const GAP_MS = Number(args["gap-ms"]);
const PODS = Number(args.pods ?? (quick ? 4 : 30));
const CONCURRENCY = Number(args.concurrency ?? (quick ? 2 : 3));
const WARMUP = quick ? 10 : 100;

// Loaded after --help: test/cluster/support.ts needs scripts/build-kind.sh's env file.
const { CONTEXT, KUBECONFIG } = await import("../../test/cluster/support.js");
const { teardown } = await import("../lib/parts.js");
const { progress, report } = await import("../lib/report.js");
const { bringUpCluster, installProduct, NS } = await import("./cluster.js");
const { kubeApi } = await import("./kube-api.js");
const { createBatch } = await import("./pod-create.js");
const { podCreateRows, toolCallRows } = await import("./rows.js");
const { runLoad, startToolAndAgent } = await import("./tool-call.js");

async function main() {
  const started = Date.now();
  progress(
    `cluster: ${ROUNDS} rounds of ${CALLS} direct + ${CALLS} governed calls (${GAP_MS} ms gaps); ` +
      `${PODS} pods injected + ${PODS} plain per round, ${CONCURRENCY} at a time${quick ? " (quick)" : ""}`,
  );
  const stops = teardown();
  // An error thrown outside main's await chain (a stream's, say) still cleans up first.
  process.once("uncaughtException", (err) => {
    console.error(err);
    void stops.stopAll().finally(() => process.exit(1));
  });
  try {
    const own = await bringUpCluster(stops);
    await installProduct(stops, own);

    await startToolAndAgent();
    // Bounded: a minute, plus the gap and 20 ms for every call.
    const deadlineMs = 60_000 + Math.ceil(((WARMUP + CALLS * ROUNDS) * 4 * (GAP_MS + 20)) / 1000) * 1000;
    const load = await runLoad({ calls: CALLS, rounds: ROUNDS, warmup: WARMUP, gapMs: GAP_MS, deadlineMs });
    progress(`tool calls: ${load.rounds.length} rounds, ${load.chains} chains completed`);
    const rows = toolCallRows(load.rounds, GAP_MS);

    const api = kubeApi(KUBECONFIG, CONTEXT, CONCURRENCY * 2);
    stops.push(async () => api.close());
    const batches: { injected: CreateSample[]; plain: CreateSample[] }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const batch = { injected: [] as CreateSample[], plain: [] as CreateSample[] };
      const order = r % 2 ? (["injected", "plain"] as const) : (["plain", "injected"] as const);
      for (const kind of order) {
        const t0 = Date.now();
        batch[kind] = await createBatch(api, {
          namespace: kind === "injected" ? NS.agents : NS.plain,
          prefix: `create-${kind}-${r}`,
          pods: PODS,
          concurrency: CONCURRENCY,
          injected: kind === "injected",
          readyTimeoutMs: 120_000,
        });
        progress(
          `round ${r + 1}: ${PODS} ${kind} pods created and Ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
        );
      }
      batches.push(batch);
    }
    rows.push(...podCreateRows(batches, CONCURRENCY));
    report("cluster", rows, {
      cluster: own ? "own (created for the run)" : "reused",
      calls: CALLS,
      rounds: ROUNDS,
      gapMs: GAP_MS,
      pods: PODS,
      concurrency: CONCURRENCY,
    });
  } finally {
    const t0 = Date.now();
    await stops.stopAll();
    progress(
      `cleaned up in ${Math.round((Date.now() - t0) / 1000)} s; whole run ${Math.round((Date.now() - started) / 1000)} s`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
