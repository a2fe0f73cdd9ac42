/**
 * bench/soak: the sidecar and the governance service under a steady open-loop load for a long
 * run (issue 32, "Long runs"): does their memory stay flat, and does the latency?
 *
 * Parts as the images run them (bench/memory's image configuration): the production build
 * (`npm run build`, afresh into a scratch directory), `node dist/service.js` on real PostgreSQL
 * (the test suite's settings, fsync off) and `node dist/sidecar.js` with the V8 flags the
 * admission webhook injects (SIDECAR_NODE_OPTIONS), NODE_ENV=production, a local HTTP tool as
 * the sidecar's one upstream. The load: --rate gRPC Invoke calls per second, open loop with
 * coordinated omission corrected (bench/lib/rate.ts), each recorded and decided by the service,
 * forwarded to the tool and its outcome reported, over --agents agents, each on a chain of its
 * own that is completed (the service signs its receipt) and replaced every CALLS_PER_CHAIN
 * calls, off the measured path.
 *
 * Readings:
 *   memory   every --sample-seconds: VmRSS of each process (/proc/<pid>/status), the V8 heap
 *            in use it reports on /metrics (nodejs_heap_size_used_bytes) and of that the old
 *            space (nodejs_heap_space_size_used_bytes{space="old"}: what survives young-generation
 *            collections, where a leak accumulates; the young generation's size follows the
 *            allocation rate, up to 2 × --max-semi-space-size, and moves RSS in steps that are
 *            no leak); the slope of each is a
 *            least-squares fit over the samples after --warmup-minutes, in MiB per 10 minutes
 *            (target ≤ 1 MiB / 10 min).
 *   latency  p50/p99 per --window-minutes window, from each call's intended start; the ratio of
 *            the largest window p99 to the smallest (target ≤ 1.2: flat within 20%). Each window
 *            is one runAtRate segment: its last calls settle before the next window's first is
 *            due, a gap of a few milliseconds.
 * Before the clock starts, WARMUP_SECONDS of the same load (JIT, connection pools) unmeasured.
 * The run stops with an error at the first failure: a part that exits, a chain that cannot be
 * renewed, or more than MAX_BACKLOG_SECONDS of the load in flight (the machine does not sustain
 * the rate: the backlog of an open loop grows until a process runs out of memory).
 * Progress on stderr after every window; rows in bench/results/soak.json; the samples and the
 * windows in the same file.
 *
 *   npx tsx bench/soak/run.ts [--minutes 30] [--rate 200] [--window-minutes 5]
 *     [--warmup-minutes 5] [--agents 16] [--sample-seconds 10] [--node-args="..."]
 *     [--service-node-options="..."] [--quick]
 *
 * --node-args: more Node flags for both processes, e.g. "--heapsnapshot-signal=SIGUSR2" to take
 * heap snapshots (kill -USR2 <pid>) and compare them when a slope is beyond its target.
 * --service-node-options: the service's NODE_OPTIONS (default SERVICE_NODE_OPTIONS, the chart's
 * service.nodeOptions); "" runs it without, to compare V8 flags by measurement.
 * --quick: the small correctness run the tests use (1 minute at 50 calls/s, 30-second windows,
 * 30 s warm-up for the slope, samples every 2 s); flags given explicitly still win.
 */

import { rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { SIDECAR_NODE_OPTIONS } from "../../operator/webhook/sidecar.js";
import type { InvokeResponse__Output } from "../../sidecar/generated/tollgate/v1/InvokeResponse.js";
import { createGatewayClient } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import { benchOrg, buildBundles, startDatabase, startServiceProcess, teardown } from "../lib/parts.js";
import { anonRssBytes, cpuSeconds, rssBytes } from "../lib/proc.js";
import { runAtRate } from "../lib/rate.js";
import { progress, report } from "../lib/report.js";
import { SERVICE_NODE_OPTIONS } from "../lib/service-flags.js";
import { startEchoUpstream, startSidecarProcess } from "../lib/sidecar-process.js";
import { infoRow, percentilesMs, type ResultRow } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    minutes: { type: "string" },
    rate: { type: "string" },
    "window-minutes": { type: "string" },
    "warmup-minutes": { type: "string" },
    agents: { type: "string" },
    "sample-seconds": { type: "string" },
    "node-args": { type: "string", default: "" },
    "service-node-options": { type: "string", default: SERVICE_NODE_OPTIONS },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
/** A numeric flag: given, else its quick or full default. */
const num = (given: string | undefined, full: number, small: number) => {
  const n = given === undefined ? (quick ? small : full) : Number(given);
  if (!(n > 0)) throw new RangeError(`flag value must be a positive number, got ${given}`);
  return n;
};
const minutes = num(args.minutes, 30, 1);
const rate = num(args.rate, 200, 50);
const windowMinutes = num(args["window-minutes"], 5, 0.5);
const warmupMinutes = num(args["warmup-minutes"], windowMinutes, 0.5);
const agents = num(args.agents, 16, 4);
const sampleSeconds = num(args["sample-seconds"], 10, 2);
const nodeArgs = args["node-args"]!.split(" ").filter(Boolean);
const WARMUP_SECONDS = quick ? 5 : 30;
const CALLS_PER_CHAIN = 200;
/** The run stops when more calls are in flight than this many seconds of the load. */
const MAX_BACKLOG_SECONDS = 30;
const MiB = 1024 * 1024;
const SLOPE_TARGET_MIB_PER_10_MIN = 1;
const P99_RATIO_TARGET = 1.2;
const windows = Math.round(minutes / windowMinutes);
if (windows < 2) throw new RangeError("--minutes must hold at least two --window-minutes windows");
if (warmupMinutes >= minutes) throw new RangeError("--warmup-minutes must be shorter than --minutes");
const PARTS = ["sidecar", "service"] as const;
type Part = (typeof PARTS)[number];

/** One memory reading of both processes, `t` seconds after the measured run began. */
interface Sample {
  t: number;
  rss: Record<Part, number>;
  heap: Record<Part, number>;
  old: Record<Part, number>;
  /** RssAnon: the process's own pages (VmRSS less the shared pages of the `node` executable). */
  anon: Record<Part, number>;
  /** The V8 heap's committed size (nodejs_heap_size_total_bytes). */
  heapTotal: Record<Part, number>;
  /** Memory of JS objects held outside the V8 heap (nodejs_external_memory_bytes, Buffers included). */
  external: Record<Part, number>;
}

/** One latency window. */
interface Window {
  index: number;
  p50: number;
  p99: number;
  max: number;
  calls: number;
  errors: number;
  achievedRate: number;
  maxInflight: number;
  /** CPU time per call of each process over the window, in µs. */
  cpuPerCallUs: Record<Part, number>;
}

/**
 * The V8 heap a process reports on /metrics (prom-client default metrics), in MiB: in use, of
 * that the old space, committed (total), and the external memory held by JS objects.
 * @throws Error when a gauge is missing.
 */
async function heapMib(
  metricsUrl: string,
): Promise<{ used: number; old: number; total: number; external: number }> {
  const lines = (await (await fetch(metricsUrl)).text()).split("\n");
  const gauge = (name: string) => {
    const line = lines.find((l) => l.startsWith(`${name} `));
    if (!line) throw new Error(`${metricsUrl} reports no ${name}`);
    return Number(line.slice(line.lastIndexOf(" ") + 1)) / MiB;
  };
  return {
    used: gauge("nodejs_heap_size_used_bytes"),
    old: gauge('nodejs_heap_space_size_used_bytes{space="old"}'),
    total: gauge("nodejs_heap_size_total_bytes"),
    external: gauge("nodejs_external_memory_bytes"),
  };
}

/**
 * Least-squares slope of (x, y) points, in y units per x unit.
 * @throws RangeError with fewer than two distinct x.
 */
function slope(points: { x: number; y: number }[]): number {
  const n = points.length;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const sxx = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  if (!(sxx > 0)) throw new RangeError("slope needs at least two distinct x");
  return points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0) / sxx;
}

async function main() {
  progress(
    `soak: ${minutes} min at ${rate} calls/s open loop through the sidecar over ${agents} agents, ${windows} windows of ${windowMinutes} min, memory every ${sampleSeconds} s, slope after ${warmupMinutes} min${quick ? " (quick)" : ""}; load average ${os.loadavg()[0]!.toFixed(1)}`,
  );
  const stops = teardown();
  try {
    const build = buildBundles();
    stops.push(async () => rmSync(build, { recursive: true, force: true }));
    const cluster = await startDatabase(["soak"]);
    stops.push(() => cluster.stop());
    const upstream = await startEchoUpstream();
    stops.push(() => upstream.close());
    const svc = await startServiceProcess(
      cluster.urlOf("soak"),
      { NODE_ENV: "production", NODE_OPTIONS: args["service-node-options"]! },
      nodeArgs,
      [path.join(build, "service.js")],
    );
    stops.push(() => svc.stop());
    const sidecar = await startSidecarProcess({
      serviceUrl: svc.url,
      apiKey: await benchOrg(svc, "soak"),
      upstreams: [{ name: "tool", type: "http", url: upstream.url }],
      env: { NODE_ENV: "production", NODE_OPTIONS: SIDECAR_NODE_OPTIONS },
      nodeArgs,
      entry: [path.join(build, "sidecar.js")],
    });
    stops.push(() => sidecar.stop());
    const client = createGatewayClient(sidecar.grpcAddress);
    stops.push(async () => client.close());
    const pids: Record<Part, number> = { sidecar: sidecar.proc.pid!, service: svc.proc.pid! };

    // The run stops at the first failure: a part that exits, a chain that cannot be renewed, or a
    // backlog that shows the machine does not sustain the rate (an open loop never waits for the
    // answers: the backlog would grow until a process runs out of memory, an overload, not a soak).
    let failure: Error | null = null;
    let rejectFailed: (err: Error) => void = () => undefined;
    const failed = new Promise<never>((_, reject) => (rejectFailed = reject));
    failed.catch(() => undefined);
    const fail = (err: Error) => {
      if (failure) return;
      failure = err;
      rejectFailed(err);
    };
    let running = true;
    for (const [part, proc] of [
      ["sidecar", sidecar.proc],
      ["service", svc.proc],
    ] as const)
      proc.once("exit", (code, signal) => {
        if (running) fail(new Error(`the ${part} exited during the soak (code ${code}, signal ${signal})`));
      });
    stops.push(async () => {
      running = false;
    });
    const maxInflight = Math.max(100, rate * MAX_BACKLOG_SECONDS);
    let inflight = 0;
    const metricsUrl: Record<Part, string> = {
      sidecar: `${sidecar.httpUrl}/metrics`,
      service: `${svc.url}/metrics`,
    };

    const unary = <Res>(method: "OpenChain" | "Invoke" | "CompleteChain", req: unknown) =>
      new Promise<Res>((resolve, reject) =>
        (client as unknown as Record<string, (r: unknown, cb: (e: Error | null, v: Res) => void) => void>)[
          method
        ]!(req, (err, res) => (err ? reject(err) : resolve(res))),
      );
    const openChain = async () =>
      (await unary<{ chain_id: string }>("OpenChain", { name: "bench-soak" })).chain_id;
    const payload = jsonToStruct({ path: "/data/report.csv", mode: "read", limit: 100 });

    // Agents: call i goes to agent i mod agents, or to the next one with no call in flight (a
    // chain's decisions are serialized), so every agent calls at rate/agents; only when all are
    // busy do calls share them. An agent whose chain is full is renewed once its last call is
    // answered: its chain completed (a receipt built) and a new one opened, off the measured
    // path; meanwhile no call takes it. The agents start at staggered points of their first
    // chain, so that renewals come one at a time, evenly spread, not all 16 in one burst.
    interface Agent {
      name: string;
      chainId: string;
      calls: number;
      inflight: number;
      renewing: boolean;
    }
    const all: Agent[] = await Promise.all(
      Array.from({ length: agents }, async (_, i) => ({
        name: `agent-${i}`,
        chainId: await openChain(),
        calls: Math.floor((i * CALLS_PER_CHAIN) / agents),
        inflight: 0,
        renewing: false,
      })),
    );
    let chainsCompleted = 0;
    const renewals = new Set<Promise<void>>();
    const renew = (agent: Agent) => {
      agent.renewing = true;
      const p = (async () => {
        await unary("CompleteChain", { chain_id: agent.chainId });
        chainsCompleted++;
        agent.chainId = await openChain();
        agent.calls = 0;
      })()
        .catch((err: Error) => fail(new Error(`chain renewal failed: ${err.message}`)))
        .finally(() => {
          agent.renewing = false;
          renewals.delete(p);
        });
      renewals.add(p);
    };
    const call = async (i: number) => {
      let agent: Agent | undefined;
      for (let k = 0; k < all.length && agent === undefined; k++) {
        const a = all[(i + k) % all.length]!;
        if (a.inflight === 0 && !a.renewing) agent = a;
      }
      agent ??= all.find((a) => !a.renewing) ?? all[i % all.length]!;
      agent.calls++;
      agent.inflight++;
      if (++inflight > maxInflight)
        fail(
          new Error(
            `${inflight} calls in flight (${MAX_BACKLOG_SECONDS} s of load): this machine does not sustain ${rate} calls/s now; lower --rate`,
          ),
        );
      try {
        const r = await unary<InvokeResponse__Output>("Invoke", {
          chain_id: agent.chainId,
          agent_name: agent.name,
          action_name: "read_file",
          payload,
          upstream: "tool",
        });
        if (r.decision?.policy_decision !== "allow" || !r.forwarded)
          throw new Error(`unexpected Invoke result ${JSON.stringify(r)}`);
      } finally {
        inflight--;
        if (--agent.inflight === 0 && agent.calls >= CALLS_PER_CHAIN) renew(agent);
      }
    };

    /** One segment of the load at the rate; rejects at the run's first failure. */
    const segment = (seconds: number) =>
      Promise.race([runAtRate({ rate, count: Math.round(rate * seconds), call }), failed]);
    const warm = await segment(WARMUP_SECONDS);
    if (warm.errors > 0) throw warm.firstError;

    // Memory samples: one now (t = 0), then every sampleSeconds until the windows are done.
    const samples: Sample[] = [];
    const t0 = performance.now();
    let sampleErrors = 0;
    const takeSample = async () => {
      const t = (performance.now() - t0) / 1000;
      try {
        const rss = { sidecar: rssBytes(pids.sidecar) / MiB, service: rssBytes(pids.service) / MiB };
        const [s, v] = await Promise.all(PARTS.map((p) => heapMib(metricsUrl[p])));
        samples.push({
          t,
          rss,
          heap: { sidecar: s!.used, service: v!.used },
          old: { sidecar: s!.old, service: v!.old },
          anon: { sidecar: anonRssBytes(pids.sidecar) / MiB, service: anonRssBytes(pids.service) / MiB },
          heapTotal: { sidecar: s!.total, service: v!.total },
          external: { sidecar: s!.external, service: v!.external },
        });
      } catch (err) {
        sampleErrors++;
        progress(`  memory sample at ${t.toFixed(0)} s failed: ${(err as Error).message}`);
      }
    };
    await takeSample();
    const sampler = setInterval(() => void takeSample(), sampleSeconds * 1000);

    const results: Window[] = [];
    try {
      for (let w = 0; w < windows; w++) {
        const cpu0 = { sidecar: cpuSeconds(pids.sidecar), service: cpuSeconds(pids.service) };
        const r = await segment(windowMinutes * 60);
        const cpuPerCallUs = {
          sidecar: ((cpuSeconds(pids.sidecar) - cpu0.sidecar) / r.latency.totalCount) * 1e6,
          service: ((cpuSeconds(pids.service) - cpu0.service) / r.latency.totalCount) * 1e6,
        };
        const p = percentilesMs(r.latency);
        results.push({
          index: w,
          p50: p.p50,
          p99: p.p99,
          max: p.max,
          calls: p.count,
          errors: r.errors,
          achievedRate: r.achievedRate,
          maxInflight: r.maxInflight,
          cpuPerCallUs,
        });
        if (r.errors > 0) progress(`  window ${w + 1}: ${r.errors} calls failed, first: ${r.firstError}`);
        const last = samples.at(-1);
        progress(
          `  window ${w + 1}/${windows} (${(((w + 1) * windowMinutes * 60) / 60).toFixed(1)} min): p50 ${p.p50.toFixed(2)} ms, p99 ${p.p99.toFixed(2)} ms, max ${p.max.toFixed(0)} ms, ${Math.round(r.achievedRate)} calls/s, ${r.maxInflight} in flight at most, CPU per call sidecar ${cpuPerCallUs.sidecar.toFixed(0)} µs, service ${cpuPerCallUs.service.toFixed(0)} µs` +
            (last
              ? `; RSS sidecar ${last.rss.sidecar.toFixed(1)} MiB (heap ${last.heap.sidecar.toFixed(1)}), service ${last.rss.service.toFixed(1)} MiB (heap ${last.heap.service.toFixed(1)})`
              : "") +
            `; ${chainsCompleted} chains completed; load average ${os.loadavg()[0]!.toFixed(1)}`,
        );
      }
    } finally {
      clearInterval(sampler);
    }
    await takeSample();
    await Promise.all(renewals);

    const afterWarmup = samples.filter((s) => s.t >= warmupMinutes * 60);
    const slopeOf = (pick: (s: Sample) => number) =>
      slope(afterWarmup.map((s) => ({ x: s.t, y: pick(s) }))) * 600;
    const rows: ResultRow[] = [];
    for (const part of PARTS) {
      for (const [kind, pick] of [
        ["RSS", (s: Sample) => s.rss[part]],
        ["V8 heap used", (s: Sample) => s.heap[part]],
        ["V8 old space used", (s: Sample) => s.old[part]],
      ] as const) {
        const value = slopeOf(pick);
        rows.push({
          ...infoRow("soak", `${part} ${kind} slope after ${warmupMinutes} min warm-up`, "MiB/10 min", [
            value,
          ]),
          target: `≤ ${SLOPE_TARGET_MIB_PER_10_MIN} MiB/10 min`,
          met: value <= SLOPE_TARGET_MIB_PER_10_MIN,
        });
      }
      // Where RSS growth lives (no target): the process's own pages, V8's committed heap, the
      // memory outside it (malloc: sockets, pg, zlib, code), and Buffers/external memory.
      for (const [kind, pick] of [
        ["RssAnon", (s: Sample) => s.anon[part]],
        ["V8 heap committed", (s: Sample) => s.heapTotal[part]],
        ["RssAnon outside the V8 heap", (s: Sample) => s.anon[part] - s.heapTotal[part]],
        ["external memory", (s: Sample) => s.external[part]],
      ] as const)
        rows.push(
          infoRow("soak", `${part} ${kind} slope after ${warmupMinutes} min warm-up`, "MiB/10 min", [
            slopeOf(pick),
          ]),
        );
      rows.push(infoRow("soak", `${part} RSS at the end`, "MiB", [samples.at(-1)!.rss[part]]));
    }
    for (const w of results) {
      const from = w.index * windowMinutes;
      rows.push(
        infoRow("soak", `p99, window ${w.index + 1} (min ${from}–${from + windowMinutes})`, "ms", [w.p99]),
      );
    }
    const p99s = results.map((w) => w.p99);
    const [maxP99, minP99] = [Math.max(...p99s), Math.min(...p99s)];
    rows.push({
      ...infoRow("soak", `p99 of the slowest of ${windows} windows`, "ms", [maxP99]),
      baseline: "p99 of the fastest window, same run",
      baselineValue: minP99,
      ratio: maxP99 / minP99,
      target: `≤ ${P99_RATIO_TARGET}× baseline`,
      met: maxP99 / minP99 <= P99_RATIO_TARGET,
    });
    const errors = results.reduce((a, w) => a + w.errors, 0);
    report("soak", rows, {
      quick,
      minutes,
      rate,
      window_minutes: windowMinutes,
      warmup_minutes: warmupMinutes,
      agents,
      service_node_options: args["service-node-options"],
      calls_per_chain: CALLS_PER_CHAIN,
      sample_seconds: sampleSeconds,
      load_average_1m_at_end: os.loadavg()[0],
      cpus: os.cpus().length,
      errors,
      chains_completed: chainsCompleted,
      sample_errors: sampleErrors,
      windows: results,
      samples,
    });
    if (errors > 0) {
      progress(`soak: ${errors} calls failed`);
      process.exitCode = 1;
    }
  } finally {
    await stops.stopAll();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
