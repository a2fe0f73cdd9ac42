/**
 * bench/memory: resident memory (RSS) of the governance service and of the sidecar, each its
 * own process as in a pod (`src/service/main.ts` on real PostgreSQL, `sidecar/main.ts` with
 * its configuration from the environment, NODE_ENV=production as in the images), read from
 * /proc/<pid>/status VmRSS:
 *   at rest     after start and a warm-up, then 2 s idle;
 *   under load  the highest of the readings taken every 100 ms while --clients (16) agents
 *               invoke through the sidecar's gRPC Invoke for --seconds (10): each action is
 *               recorded and decided by the service, forwarded to a local HTTP tool, and its
 *               outcome reported; every agent completes its chain (the service signs a
 *               receipt) and opens a new one every 200 calls.
 * Targets: sidecar ≤ 80 MiB, service ≤ 250 MiB, at rest and under load. No baseline. Each
 * repeat starts both processes afresh on a fresh database. The JSON also holds what shows
 * where the RSS goes: the V8 heap and external memory each process reports on /metrics, and
 * the runtime's floor, the RSS of an idle `node` and of an idle `node --import tsx` (the
 * images run the TypeScript sources through tsx).
 *
 *   npx tsx bench/memory/run.ts [--clients 16] [--seconds 10] [--repeats 3] [--node-args "..."] [--quick]
 *
 * --node-args: V8/Node flags for both processes (e.g. "--max-semi-space-size=1"), to see how
 * they move the figures.
 */
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import type { InvokeResponse__Output } from "../../sidecar/generated/tollgate/v1/InvokeResponse.js";
import { createGatewayClient } from "../../sidecar/proto.js";
import { jsonToStruct } from "../../sidecar/struct.js";
import { benchOrg, repoRoot, startDatabase, startServiceProcess } from "../lib/parts.js";
import { progress, report } from "../lib/report.js";
import { rssBytes, startEchoUpstream, startSidecarProcess } from "../lib/sidecar-process.js";
import { median, type ResultRow, spreadPct } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    clients: { type: "string", default: "16" },
    seconds: { type: "string", default: "10" },
    repeats: { type: "string", default: "3" },
    "node-args": { type: "string", default: "" },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const clients = quick ? 4 : Number(args.clients);
const seconds = quick ? 2 : Number(args.seconds);
const repeats = quick ? 1 : Number(args.repeats);
const warmupCalls = quick ? 10 : 100;
const IDLE_MS = 2000;
const SAMPLE_MS = 100;
const CALLS_PER_CHAIN = 200;
const MiB = 1024 * 1024;
const TARGETS = { sidecar: 80, service: 250 } as const;
const nodeArgs = args["node-args"]!.split(" ").filter(Boolean);
type Part = keyof typeof TARGETS;

const payload = jsonToStruct({ path: "/data/report.csv", mode: "read", limit: 100 });

/** V8 heap and external memory a process reports on /metrics (prom-client default metrics), in MiB. */
async function heapOf(metricsUrl: string, prefix: string) {
  const text = await (await fetch(metricsUrl)).text();
  const value = (name: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`${prefix}${name} `));
    return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) / MiB : null;
  };
  return {
    heap_used_mib: value("nodejs_heap_size_used_bytes"),
    heap_total_mib: value("nodejs_heap_size_total_bytes"),
    external_mib: value("nodejs_external_memory_bytes"),
  };
}

/** One repeat: fresh processes, rest reading, load with sampling. */
async function measure(databaseUrl: string, upstreamUrl: string) {
  const svc = await startServiceProcess(databaseUrl, { NODE_ENV: "production" }, nodeArgs);
  const stops: (() => Promise<void>)[] = [() => svc.stop()];
  try {
    const apiKey = await benchOrg(svc, "bench");
    const sidecar = await startSidecarProcess({
      serviceUrl: svc.url,
      apiKey,
      upstreams: [{ name: "tool", type: "http", url: upstreamUrl }],
      env: { NODE_ENV: "production" },
      nodeArgs,
    });
    stops.unshift(() => sidecar.stop());
    const pids: Record<Part, number> = { sidecar: sidecar.proc.pid!, service: svc.proc.pid! };
    const client = createGatewayClient(sidecar.grpcAddress);
    stops.unshift(async () => client.close());
    const unary = <Res>(method: "OpenChain" | "Invoke" | "CompleteChain", req: unknown) =>
      new Promise<Res>((resolve, reject) =>
        (client as unknown as Record<string, (r: unknown, cb: (e: Error | null, v: Res) => void) => void>)[
          method
        ]!(req, (err, res) => (err ? reject(err) : resolve(res))),
      );

    /** An agent: invokes until `until` (ms, performance.now), a new chain every CALLS_PER_CHAIN calls. */
    const agent = async (name: string, until: number, maxCalls = Number.POSITIVE_INFINITY) => {
      let calls = 0;
      let chainId = "";
      let chainCalls = CALLS_PER_CHAIN;
      while (performance.now() < until && calls < maxCalls) {
        if (chainCalls >= CALLS_PER_CHAIN) {
          if (chainId) await unary("CompleteChain", { chain_id: chainId });
          chainId = (await unary<{ chain_id: string }>("OpenChain", { name: "bench-memory" })).chain_id;
          chainCalls = 0;
        }
        const r = await unary<InvokeResponse__Output>("Invoke", {
          chain_id: chainId,
          agent_name: name,
          action_name: "read_file",
          payload,
          upstream: "tool",
        });
        if (r.decision?.policy_decision !== "allow" || !r.forwarded)
          throw new Error(`unexpected Invoke result ${JSON.stringify(r)}`);
        calls++;
        chainCalls++;
      }
      if (chainId) await unary("CompleteChain", { chain_id: chainId });
      return calls;
    };

    await Promise.all(
      Array.from({ length: 4 }, (_, i) => agent(`warmup-${i}`, Number.POSITIVE_INFINITY, warmupCalls)),
    );
    await sleep(IDLE_MS);
    const rest = { sidecar: rssBytes(pids.sidecar) / MiB, service: rssBytes(pids.service) / MiB };
    const restHeap = {
      sidecar: await heapOf(`${sidecar.httpUrl}/metrics`, "tollgate_sidecar_"),
      service: await heapOf(`${svc.url}/metrics`, ""),
    };

    const peak = { ...rest };
    const sampler = setInterval(() => {
      for (const part of ["sidecar", "service"] as const)
        peak[part] = Math.max(peak[part], rssBytes(pids[part]) / MiB);
    }, SAMPLE_MS);
    const start = performance.now();
    const until = start + seconds * 1000;
    let calls = 0;
    try {
      const counts = await Promise.all(Array.from({ length: clients }, (_, i) => agent(`agent-${i}`, until)));
      calls = counts.reduce((a, b) => a + b, 0);
    } finally {
      clearInterval(sampler);
    }
    const perSecond = calls / ((performance.now() - start) / 1000);
    const loadHeap = {
      sidecar: await heapOf(`${sidecar.httpUrl}/metrics`, "tollgate_sidecar_"),
      service: await heapOf(`${svc.url}/metrics`, ""),
    };
    return { rest, peak, perSecond, restHeap, loadHeap };
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
  }
}

/** RSS in MiB of an idle `node` with `args` (e.g. --import tsx), read after IDLE_MS. */
async function idleNodeRss(extra: string[]): Promise<number> {
  const proc = spawn(process.execPath, [...nodeArgs, ...extra, "-e", "setInterval(() => {}, 1000)"], {
    cwd: repoRoot,
    stdio: "ignore",
  });
  try {
    await sleep(IDLE_MS);
    return rssBytes(proc.pid!) / MiB;
  } finally {
    proc.kill();
  }
}

async function main() {
  progress(`memory: ${clients} agents for ${seconds}s through the sidecar, ${repeats} repeats`);
  const databases = Array.from({ length: repeats }, (_, i) => `memory_${i + 1}`);
  const cluster = await startDatabase(databases);
  const upstream = await startEchoUpstream();
  const runs: Awaited<ReturnType<typeof measure>>[] = [];
  try {
    for (const db of databases) {
      const r = await measure(cluster.urlOf(db), upstream.url);
      runs.push(r);
      progress(
        `  run ${runs.length}: sidecar ${r.rest.sidecar.toFixed(1)} MiB at rest, ${r.peak.sidecar.toFixed(1)} MiB under load; service ${r.rest.service.toFixed(1)} MiB at rest, ${r.peak.service.toFixed(1)} MiB under load; ${r.perSecond.toFixed(0)} calls/s`,
      );
    }
  } finally {
    await upstream.close();
    await cluster.stop();
  }
  const rows: ResultRow[] = [];
  for (const part of ["sidecar", "service"] as const) {
    for (const phase of ["rest", "peak"] as const) {
      const values = runs.map((r) => r[phase][part]);
      const value = median(values);
      rows.push({
        benchmark: "memory",
        figure: `${part} RSS ${phase === "rest" ? "at rest" : `under load (max, ${clients} agents)`}`,
        value,
        unit: "MiB",
        baseline: "—",
        baselineValue: null,
        ratio: null,
        better: "lower",
        target: `≤ ${TARGETS[part]} MiB`,
        met: value <= TARGETS[part],
        spreadPct: spreadPct(values),
        repeats,
      });
    }
  }
  report("memory", rows, {
    clients,
    seconds,
    node_args: nodeArgs,
    runtime_floor_mib: { node: await idleNodeRss([]), node_tsx: await idleNodeRss(["--import", "tsx"]) },
    calls_per_second: runs.map((r) => r.perSecond),
    heap_at_rest: runs.map((r) => r.restHeap),
    heap_after_load: runs.map((r) => r.loadHeap),
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
