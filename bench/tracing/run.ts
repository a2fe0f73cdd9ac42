/**
 * bench/tracing: what tracing costs a governed call (issue 22, README "Operations → Tracing").
 *
 * (1) Off path, in this process: the tracing calls a governed call still makes while OTEL_* is
 *     unset — the sidecar's server, forward and request spans (`withSpan`, the SDK's
 *     context/propagation no-ops), the upstream's carrier, the log mixin, the service's request
 *     hooks' and PostgreSQL spans' checks — run in a loop beside the same loop without them
 *     (the baseline, same run). Their difference per call, in ns, is the off-cost; its ratio to
 *     the governed call's p50 latency measured in (2) shows it is negligible (target ≤ 0.1%).
 * (2) End to end: one agent's back-to-back gRPC Invoke (allow, forwarded to a local HTTP tool,
 *     recorded on real PostgreSQL) through the production bundles of the service and the sidecar,
 *     once with OTEL_* unset (the baseline) and once exporting every span to a real
 *     OpenTelemetry Collector (scripts/build-otelcol.sh; file exporter), rounds alternating;
 *     p50 and p99 ratios set/unset.
 *
 *   npx tsx bench/tracing/run.ts [--calls 2000] [--rounds 3] [--quick]
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import type * as grpc from "@grpc/grpc-js";
import { context, propagation, trace } from "@opentelemetry/api";
import { createGatewayClient } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import {
  detached,
  extractContext,
  traceCarrier,
  traceLogFields,
  tracer,
  tracingActive,
  withSpan,
} from "../../src/telemetry/tracing.js";
import { freePort } from "../../test/support/postgres.js";
import {
  benchOrg,
  buildBundles,
  repoRoot,
  startDatabase,
  startServiceProcess,
  teardown,
} from "../lib/parts.js";
import { progress, report } from "../lib/report.js";
import { startEchoUpstream, startSidecarProcess } from "../lib/sidecar-process.js";
import { infoRow, latencyHistogram, median, percentilesMs, type ResultRow, spreadPct } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    calls: { type: "string", default: "2000" },
    rounds: { type: "string", default: "3" },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const calls = quick ? 50 : Number(args.calls);
const rounds = quick ? 1 : Number(args.rounds);
const BENCH = "tracing";
const TARGET_OFF_SHARE = 0.001;
const TARGET_ON_P50 = 1.25;

// ---- (1) the off path, in this process (no SDK registered: exactly the OTEL_* unset state) ----

const t = tracer("bench");
const noop = async () => 1;

/** One governed call's tracing calls while tracing is off (see the module comment). */
async function offPath(headers: Record<string, string>): Promise<number> {
  // sidecar: the gRPC server span, the SDK's request span and header injection, the forward span
  let n = await withSpan(t, "server", {}, noop);
  const parent = context.active();
  if (trace.getSpan(parent) === undefined) propagation.inject(parent, headers);
  n += await withSpan(t, "forward", {}, noop);
  if (traceCarrier() !== null) n++;
  // service: request hooks are not registered; two statements check for a span; the decision span
  if (tracingActive()) n++;
  if (tracingActive()) n++;
  n += await withSpan(t, "decision", {}, noop);
  extractContext(headers);
  detached(() => n++);
  // one log line's mixin
  n += Object.keys(traceLogFields()).length;
  return n;
}

/** The same work without the tracing calls. */
async function baseline(headers: Record<string, string>): Promise<number> {
  let n = await noop();
  n += await noop();
  n++;
  n += await noop();
  n += Object.keys(headers).length;
  return n;
}

async function nsPerCall(
  fn: (h: Record<string, string>) => Promise<number>,
  iterations: number,
): Promise<number> {
  const headers = { accept: "application/json" };
  let sink = 0;
  for (let i = 0; i < 10_000; i++) sink += await fn(headers);
  const started = performance.now();
  for (let i = 0; i < iterations; i++) sink += await fn(headers);
  const ns = ((performance.now() - started) * 1e6) / iterations;
  if (sink < 0) throw new Error("unreachable");
  return ns;
}

// ---- (2) end to end ----

async function startCollector(dir: string): Promise<{ endpoint: string; stop(): Promise<void> }> {
  const bin = execFileSync("bash", [path.join(repoRoot, "scripts/build-otelcol.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  })
    .trim()
    .split("\n")
    .at(-1)!;
  const [grpcPort, httpPort] = [await freePort(), await freePort()];
  const config = path.join(dir, "otelcol.yaml");
  writeFileSync(
    config,
    `receivers:
  otlp:
    protocols:
      grpc: { endpoint: "127.0.0.1:${grpcPort}" }
      http: { endpoint: "127.0.0.1:${httpPort}" }
exporters:
  file: { path: ${JSON.stringify(path.join(dir, "traces.jsonl"))} }
service:
  telemetry: { metrics: { level: none } }
  pipelines:
    traces: { receivers: [otlp], exporters: [file] }
`,
  );
  const proc = spawn(bin, ["--config", config], { stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  await new Promise<void>((resolve, reject) => {
    proc.stderr!.on("data", (d) => {
      log += d;
      if (log.includes("Everything is ready")) resolve();
    });
    proc.once("exit", (code) => reject(new Error(`collector exited (${code}):\n${log}`)));
  });
  return {
    endpoint: `http://127.0.0.1:${httpPort}`,
    async stop() {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    },
  };
}

function unary<Res>(client: grpc.Client, method: string, req: unknown): Promise<Res> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!;
    fn.call(client, req, (err: grpc.ServiceError | null, res: Res) => (err ? reject(err) : resolve(res)));
  });
}

/** `n` back-to-back Invokes on one chain; p50/p99 in ms. */
async function invokeLoop(grpcAddress: string, n: number) {
  const client = createGatewayClient(grpcAddress) as unknown as grpc.Client;
  try {
    const { chain_id } = await unary<{ chain_id: string }>(client, "OpenChain", {
      name: "bench-tracing",
      metadata: jsonToStruct({}),
    });
    const request = {
      chain_id,
      agent_name: "bench",
      action_type: "tool_call",
      action_name: "search",
      payload: jsonToStruct({ query: "weather in Paris", limit: 5 }),
      upstream: "tool",
    };
    for (let i = 0; i < Math.min(100, n); i++) await unary(client, "Invoke", request);
    const h = latencyHistogram();
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      await unary(client, "Invoke", request);
      h.recordValue(Math.max(1, Math.round((performance.now() - started) * 1000)));
    }
    await unary(client, "CompleteChain", { chain_id });
    return percentilesMs(h);
  } finally {
    client.close();
  }
}

async function main(): Promise<void> {
  const rows: ResultRow[] = [];
  const parts = teardown();
  const dir = mkdtempSync(path.join(os.tmpdir(), "tg-bench-tracing-"));
  parts.push(async () => rmSync(dir, { recursive: true, force: true }));
  try {
    progress("off path in this process");
    const iterations = quick ? 20_000 : 500_000;
    const offNs: number[] = [];
    const baseNs: number[] = [];
    await nsPerCall(baseline, iterations); // warm-up round, discarded
    await nsPerCall(offPath, iterations);
    for (let r = 0; r < Math.max(5, rounds); r++) {
      baseNs.push(await nsPerCall(baseline, iterations));
      offNs.push(await nsPerCall(offPath, iterations));
    }
    // Below the loop's noise the difference can come out negative: reported as measured.
    const costs = offNs.map((o, i) => o - baseNs[i]!);

    progress("building bundles, starting PostgreSQL and the collector");
    const dist = buildBundles();
    parts.push(async () => rmSync(dist, { recursive: true, force: true }));
    const db = await startDatabase(["unset", "otel"]);
    parts.push(() => db.stop());
    const collector = await startCollector(dir);
    parts.push(() => collector.stop());
    const tool = await startEchoUpstream();
    parts.push(() => tool.close());

    const configs = {
      unset: {} as Record<string, string>,
      otel: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" },
    };
    const stacks: Record<string, string> = {};
    for (const [name, env] of Object.entries(configs)) {
      const svc = await startServiceProcess(db.urlOf(name), env, [], [path.join(dist, "service.js")]);
      parts.push(() => svc.stop());
      const key = await benchOrg(svc, `bench-${name}`);
      const sidecar = await startSidecarProcess({
        serviceUrl: svc.url,
        apiKey: key,
        upstreams: [{ name: "tool", type: "http", url: tool.url }],
        entry: [path.join(dist, "sidecar.js")],
        env,
      });
      parts.push(() => sidecar.stop());
      stacks[name] = sidecar.grpcAddress;
    }
    const p50 = { unset: [] as number[], otel: [] as number[] };
    const p99 = { unset: [] as number[], otel: [] as number[] };
    for (let r = 0; r < rounds; r++) {
      for (const name of r % 2 === 0 ? (["unset", "otel"] as const) : (["otel", "unset"] as const)) {
        progress(`round ${r + 1}/${rounds}: ${calls} Invokes, OTEL ${name}`);
        const p = await invokeLoop(stacks[name]!, calls);
        p50[name].push(p.p50);
        p99[name].push(p.p99);
      }
    }
    const callP50Ns = median(p50.unset) * 1e6;
    const share = Math.max(0, median(costs)) / callP50Ns;
    rows.push(
      {
        ...infoRow(BENCH, "off path: a governed call's tracing calls, OTEL unset", "ns", offNs),
        baseline: "the same loop without them",
        baselineValue: median(baseNs),
        ratio: median(offNs) / median(baseNs),
      },
      {
        ...infoRow(BENCH, "off-cost per governed call (difference) vs the call's p50", "ns", costs),
        baseline: "Invoke p50, OTEL unset",
        baselineValue: Math.round(callP50Ns),
        ratio: share,
        target: `ratio ≤ ${TARGET_OFF_SHARE}`,
        met: share <= TARGET_OFF_SHARE,
      },
      infoRow(BENCH, "Invoke p50, OTEL unset", "ms", p50.unset),
      {
        ...infoRow(BENCH, "Invoke p50, exporting to a collector", "ms", p50.otel),
        baseline: "OTEL unset",
        baselineValue: median(p50.unset),
        ratio: median(p50.otel) / median(p50.unset),
        target: `≤ ${TARGET_ON_P50}×`,
        met: median(p50.otel) / median(p50.unset) <= TARGET_ON_P50,
        spreadPct: spreadPct(p50.otel),
      },
      {
        ...infoRow(BENCH, "Invoke p99, exporting to a collector", "ms", p99.otel),
        baseline: "OTEL unset",
        baselineValue: median(p99.unset),
        ratio: median(p99.otel) / median(p99.unset),
      },
    );
    report(BENCH, rows, { quick, calls, rounds, offNs, baseNs });
  } finally {
    await parts.stopAll();
  }
}

await main();
