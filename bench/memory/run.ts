/**
 * bench/memory: resident memory (RSS) of the governance service and of the sidecar, each its
 * own process as in a pod (the service on real PostgreSQL, the sidecar with its configuration
 * from the environment, NODE_ENV=production as in the images), read from /proc/<pid>/status
 * VmRSS, in two configurations measured in the same run:
 *   image  as the images run them: the production build (`npm run build`, built afresh into a
 *          scratch directory) with `node dist/service.js` and `node dist/sidecar.js`, the
 *          sidecar with the V8 flags the admission webhook injects as NODE_OPTIONS
 *          (SIDECAR_NODE_OPTIONS of operator/webhook/sidecar.ts; the sidecar image sets the same);
 *   tsx    as `npm start` runs them in development: the TypeScript sources through
 *          `node --import tsx`, no flags.
 * Readings:
 *   at rest     after start and a warm-up, then 2 s idle;
 *   under load  the highest of the readings taken every 100 ms while --clients (16) agents
 *               invoke through the sidecar's gRPC Invoke for --seconds (10): each action is
 *               recorded and decided by the service, forwarded to a local HTTP tool, and its
 *               outcome reported; every agent completes its chain (the service signs a
 *               receipt) and opens a new one every 200 calls.
 * Targets (image configuration): sidecar ≤ 45 MiB at rest and ≤ 55 MiB under load (issue 30),
 * service ≤ 250 MiB;
 * the tsx figures are the baseline (ratio = image / tsx). Each repeat starts both processes
 * afresh on a fresh database, once per configuration. The JSON also holds what shows where the
 * RSS goes: the V8 heap and external memory each process reports on /metrics at rest and after
 * the load, the highest V8 heap in use seen during the load (sampled every 500 ms: what the
 * sidecar's --max-old-space-size must leave room for), the CPU time per call of each process
 * (what the smaller heap costs in garbage collection), and the runtime's floor, the RSS of an
 * idle `node` and of an idle `node --import tsx`; and, in each repeat, the sidecar's own floor:
 * an idle `node` with its V8 flags that imports only the packages its bundle loads at start
 * (row "sidecar RSS at rest vs its packages alone").
 *
 *   npx tsx bench/memory/run.ts [--clients 16] [--seconds 10] [--repeats 3] [--node-args="..."] [--quick]
 *
 * --node-args: more V8/Node flags for every process of both configurations, after the injected
 * NODE_OPTIONS (so they win), e.g. "--max-old-space-size=4096" to see the sidecar's heap unbounded.
 */
import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { SIDECAR_NODE_OPTIONS } from "../../operator/webhook/sidecar.js";
import type { InvokeResponse__Output } from "../../sidecar/generated/tollgate/v1/InvokeResponse.js";
import { createGatewayClient } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import { benchOrg, buildBundles, repoRoot, startDatabase, startServiceProcess } from "../lib/parts.js";
import { anonRssBytes, cpuSeconds, peakRssBytes, rssBytes } from "../lib/proc.js";
import { progress, report } from "../lib/report.js";
import { startEchoUpstream, startSidecarProcess } from "../lib/sidecar-process.js";
import { infoRow, median, type ResultRow, spreadPct } from "../lib/stats.js";

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
const HEAP_SAMPLE_MS = 500;
const CALLS_PER_CHAIN = 200;
const MiB = 1024 * 1024;
/** MiB at rest and under load (issue 30 for the sidecar). */
const TARGETS = { sidecar: { rest: 45, peak: 55 }, service: { rest: 250, peak: 250 } } as const;
const nodeArgs = args["node-args"]!.split(" ").filter(Boolean);
type Part = keyof typeof TARGETS;
const PARTS = ["sidecar", "service"] as const satisfies Part[];

/** How the two processes are started in one configuration. */
interface Configuration {
  /** What node runs for each part (relative to the repository root), after nodeArgs. */
  entry: Record<Part, string[]>;
  /** Environment added for each part. */
  env: Record<Part, Record<string, string>>;
}

/** The image configuration, running the build in `buildDir`; the tsx configuration. */
const configurations = (buildDir: string) => ({
  image: {
    entry: { sidecar: [path.join(buildDir, "sidecar.js")], service: [path.join(buildDir, "service.js")] },
    env: { sidecar: { NODE_OPTIONS: SIDECAR_NODE_OPTIONS }, service: {} },
  },
  tsx: {
    entry: {
      sidecar: ["--import", "tsx", "sidecar/main.ts"],
      service: ["--import", "tsx", "src/service/main.ts"],
    },
    env: { sidecar: {}, service: {} },
  },
});
type ConfigName = keyof ReturnType<typeof configurations>;

const payload = jsonToStruct({ path: "/data/report.csv", mode: "read", limit: 100 });

/** V8 heap and external memory a process reports on /metrics (prom-client default metrics), in MiB. */
async function heapOf(metricsUrl: string) {
  const text = await (await fetch(metricsUrl)).text();
  const value = (name: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`${name} `));
    return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) / MiB : null;
  };
  return {
    heap_used_mib: value("nodejs_heap_size_used_bytes"),
    heap_total_mib: value("nodejs_heap_size_total_bytes"),
    external_mib: value("nodejs_external_memory_bytes"),
  };
}

/** One repeat in one configuration: fresh processes, rest reading, load with sampling. */
async function measure(config: Configuration, databaseUrl: string, upstreamUrl: string) {
  const svc = await startServiceProcess(
    databaseUrl,
    { NODE_ENV: "production", ...config.env.service },
    nodeArgs,
    config.entry.service,
  );
  const stops: (() => Promise<void>)[] = [() => svc.stop()];
  try {
    const apiKey = await benchOrg(svc, "bench");
    const sidecar = await startSidecarProcess({
      serviceUrl: svc.url,
      apiKey,
      upstreams: [{ name: "tool", type: "http", url: upstreamUrl }],
      env: { NODE_ENV: "production", ...config.env.sidecar },
      nodeArgs,
      entry: config.entry.sidecar,
    });
    stops.unshift(() => sidecar.stop());
    const pids: Record<Part, number> = { sidecar: sidecar.proc.pid!, service: svc.proc.pid! };
    const metricsOf = {
      sidecar: () => heapOf(`${sidecar.httpUrl}/metrics`),
      service: () => heapOf(`${svc.url}/metrics`),
    };
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
    const restAnon = anonRssBytes(pids.sidecar) / MiB;
    const restHeap = { sidecar: await metricsOf.sidecar(), service: await metricsOf.service() };

    const peak = { ...rest };
    let peakAnon = restAnon;
    const heapPeak = {
      sidecar: restHeap.sidecar.heap_used_mib ?? 0,
      service: restHeap.service.heap_used_mib ?? 0,
    };
    const sampler = setInterval(() => {
      for (const part of PARTS) peak[part] = Math.max(peak[part], rssBytes(pids[part]) / MiB);
      peakAnon = Math.max(peakAnon, anonRssBytes(pids.sidecar) / MiB);
    }, SAMPLE_MS);
    const heapSampler = setInterval(() => {
      for (const part of PARTS)
        metricsOf[part]().then(
          (h) => (heapPeak[part] = Math.max(heapPeak[part], h.heap_used_mib ?? 0)),
          () => undefined,
        );
    }, HEAP_SAMPLE_MS);
    const cpuBefore = { sidecar: cpuSeconds(pids.sidecar), service: cpuSeconds(pids.service) };
    const start = performance.now();
    const until = start + seconds * 1000;
    let calls = 0;
    try {
      const counts = await Promise.all(Array.from({ length: clients }, (_, i) => agent(`agent-${i}`, until)));
      calls = counts.reduce((a, b) => a + b, 0);
    } finally {
      clearInterval(sampler);
      clearInterval(heapSampler);
    }
    const perSecond = calls / ((performance.now() - start) / 1000);
    const cpuPerCallUs = {
      sidecar: ((cpuSeconds(pids.sidecar) - cpuBefore.sidecar) / calls) * 1e6,
      service: ((cpuSeconds(pids.service) - cpuBefore.service) / calls) * 1e6,
    };
    const loadHeap = { sidecar: await metricsOf.sidecar(), service: await metricsOf.service() };
    return {
      rest,
      peak,
      sidecarAnon: { rest: restAnon, peak: peakAnon },
      perSecond,
      cpuPerCallUs,
      restHeap,
      loadHeap,
      heapPeak,
    };
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
  }
}

/**
 * The service on embedded PGlite (no DATABASE_URL, a fresh data directory: what a first trial
 * and the chart's default run), production build: its RSS at rest after start, an organization
 * and IDLE_MS idle, and its own peak (VmHWM). The initdb child it runs once is not counted: it
 * has exited by then.
 */
async function measureEmbedded(entry: string[]) {
  const svc = await startServiceProcess(null, { NODE_ENV: "production" }, nodeArgs, entry);
  try {
    await benchOrg(svc, "bench");
    await sleep(IDLE_MS);
    return { rest: rssBytes(svc.proc.pid!) / MiB, peak: peakRssBytes(svc.proc.pid!) / MiB };
  } finally {
    await svc.stop();
  }
}

/**
 * RSS in MiB of an idle `node` with `args` (e.g. --import tsx) that imports `packages` first
 * (none: the bare runtime), read after IDLE_MS.
 */
async function idleNodeRss(extra: string[], packages: string[] = []): Promise<number> {
  const script = `${packages.map((p) => `await import(${JSON.stringify(p)});`).join("")}setInterval(() => {}, 1000);`;
  const proc = spawn(process.execPath, [...nodeArgs, ...extra, "--input-type=module", "-e", script], {
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

/**
 * The packages a bundle imports when it starts: the bare specifiers of its static imports and
 * of the chunks those import (not the dynamic import()s, loaded only when needed).
 */
function packagesLoadedAtStart(bundle: string): string[] {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const [, spec] of readFileSync(file, "utf8").matchAll(
      /^(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)"/gms,
    )) {
      if (spec!.startsWith("./")) visit(path.join(path.dirname(file), spec!));
      else if (!spec!.startsWith("node:")) packages.add(spec!);
    }
  };
  visit(bundle);
  return [...packages].sort();
}

async function main() {
  progress(
    `memory: ${clients} agents for ${seconds}s through the sidecar, ${repeats} repeats, image build and tsx`,
  );
  const buildDir = buildBundles();
  const configs = configurations(buildDir);
  const names = Object.keys(configs) as ConfigName[];
  const databases = Array.from({ length: repeats * names.length }, (_, i) => `memory_${i + 1}`);
  const cluster = await startDatabase(databases);
  const upstream = await startEchoUpstream();
  const sidecarPackages = packagesLoadedAtStart(configs.image.entry.sidecar[0]!);
  const runs: Record<ConfigName, Awaited<ReturnType<typeof measure>>[]> = { image: [], tsx: [] };
  const embedded: Awaited<ReturnType<typeof measureEmbedded>>[] = [];
  /** Per repeat: an idle node with the sidecar's V8 flags that imports only its packages. */
  const packagesFloor: number[] = [];
  try {
    for (let i = 0; i < repeats; i++) {
      const e = await measureEmbedded(configs.image.entry.service);
      embedded.push(e);
      progress(
        `  run ${i + 1} embedded: service ${e.rest.toFixed(1)} MiB at rest, ${e.peak.toFixed(1)} MiB peak`,
      );
      for (const [j, name] of names.entries()) {
        const r = await measure(configs[name], cluster.urlOf(databases[i * names.length + j]!), upstream.url);
        runs[name].push(r);
        if (name === "image")
          packagesFloor.push(await idleNodeRss(SIDECAR_NODE_OPTIONS.split(" "), sidecarPackages));
        progress(
          `  run ${i + 1} ${name}: sidecar ${r.rest.sidecar.toFixed(1)} MiB at rest, ${r.peak.sidecar.toFixed(1)} MiB under load (heap ≤ ${r.heapPeak.sidecar.toFixed(1)}); service ${r.rest.service.toFixed(1)} MiB at rest, ${r.peak.service.toFixed(1)} MiB under load (heap ≤ ${r.heapPeak.service.toFixed(1)}); ${r.perSecond.toFixed(0)} calls/s, CPU per call sidecar ${r.cpuPerCallUs.sidecar.toFixed(0)} µs, service ${r.cpuPerCallUs.service.toFixed(0)} µs`,
        );
      }
    }
  } finally {
    await upstream.close();
    await cluster.stop();
    rmSync(buildDir, { recursive: true, force: true });
  }
  const rows: ResultRow[] = [];
  const figure = (part: Part, phase: "rest" | "peak") =>
    `${part} RSS ${phase === "rest" ? "at rest" : `under load (max, ${clients} agents)`}`;
  for (const part of PARTS) {
    for (const phase of ["rest", "peak"] as const) {
      const image = runs.image.map((r) => r[phase][part]);
      const value = median(image);
      const baselineValue = median(runs.tsx.map((r) => r[phase][part]));
      rows.push({
        benchmark: "memory",
        figure: figure(part, phase),
        value,
        unit: "MiB",
        baseline: "through tsx (npm start)",
        baselineValue,
        ratio: value / baselineValue,
        better: "lower",
        target: `≤ ${TARGETS[part][phase]} MiB`,
        met: value <= TARGETS[part][phase],
        spreadPct: spreadPct(image),
        repeats,
      });
    }
  }
  for (const phase of ["rest", "peak"] as const)
    rows.push(
      infoRow(
        "memory",
        `sidecar anonymous RSS (RssAnon) ${phase === "rest" ? "at rest" : "under load"}: what each pod adds (the node executable's pages are shared)`,
        "MiB",
        runs.image.map((r) => r.sidecarAnon[phase]),
      ),
    );
  // What the sidecar's packages alone weigh in a node with the same flags: the floor of its RSS.
  const restImage = median(runs.image.map((r) => r.rest.sidecar));
  rows.push({
    benchmark: "memory",
    figure: "sidecar RSS at rest vs its packages alone",
    value: restImage,
    unit: "MiB",
    baseline: "idle node, same flags, importing only the packages the sidecar loads at start",
    baselineValue: median(packagesFloor),
    ratio: restImage / median(packagesFloor),
    better: "lower",
    target: "—",
    met: null,
    spreadPct: spreadPct(packagesFloor),
    repeats,
  });
  // The embedded default beside the same build on PostgreSQL, both at rest, same run.
  const embeddedRest = embedded.map((e) => e.rest);
  const onPostgres = median(runs.image.map((r) => r.rest.service));
  rows.push({
    benchmark: "memory",
    figure: "service RSS at rest on embedded PGlite",
    value: median(embeddedRest),
    unit: "MiB",
    baseline: "the same build on PostgreSQL, at rest",
    baselineValue: onPostgres,
    ratio: median(embeddedRest) / onPostgres,
    better: "lower",
    target: `≤ ${TARGETS.service.rest} MiB`,
    met: median(embeddedRest) <= TARGETS.service.rest,
    spreadPct: spreadPct(embeddedRest),
    repeats,
  });
  rows.push(
    infoRow(
      "memory",
      "service peak RSS on embedded PGlite (VmHWM, start included)",
      "MiB",
      embedded.map((e) => e.peak),
    ),
  );
  for (const part of PARTS) {
    for (const phase of ["rest", "peak"] as const) {
      const tsx = runs.tsx.map((r) => r[phase][part]);
      rows.push(infoRow("memory", `${figure(part, phase)}, through tsx`, "MiB", tsx));
    }
  }
  const perConfig = <T>(pick: (r: Awaited<ReturnType<typeof measure>>) => T) =>
    Object.fromEntries(names.map((name) => [name, runs[name].map(pick)]));
  report("memory", rows, {
    clients,
    seconds,
    node_args: nodeArgs,
    configurations: {
      image: { sidecar: `node ${SIDECAR_NODE_OPTIONS} dist/sidecar.js`, service: "node dist/service.js" },
      tsx: { sidecar: "node --import tsx sidecar/main.ts", service: "node --import tsx src/service/main.ts" },
    },
    runtime_floor_mib: {
      node: await idleNodeRss([]),
      node_tsx: await idleNodeRss(["--import", "tsx"]),
      node_sidecar_packages: packagesFloor,
      sidecar_packages: sidecarPackages,
    },
    calls_per_second: perConfig((r) => r.perSecond),
    sidecar_anon_rss_mib: perConfig((r) => r.sidecarAnon),
    cpu_us_per_call: perConfig((r) => r.cpuPerCallUs),
    heap_peak_under_load_mib: perConfig((r) => r.heapPeak),
    heap_at_rest: perConfig((r) => r.restHeap),
    heap_after_load: perConfig((r) => r.loadHeap),
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
