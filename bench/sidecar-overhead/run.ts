/**
 * bench/sidecar-overhead: latency a tool call pays for going through the sidecar. In one run it
 * measures p50 and p99 of the same JSON tool call made
 *   (a) directly to a local HTTP upstream (keep-alive HTTP/1.1 POST), and
 *   (b) through the sidecar's gRPC Invoke (allow path: the real service records the action on
 *       real PostgreSQL and decides, the sidecar forwards to the same upstream and reports the
 *       outcome in the background),
 * and prints the added latency (b − a at p50 and p99). Targets: added p50 ≤ 2 ms, p99 ≤ 6 ms.
 * To show where the added time goes it also measures, in the same rounds,
 *   (c) the governance decision alone: the SDK's recordAgentAction from this process straight
 *       to the service (same transport as the sidecar), no sidecar and no tool, and
 *   (d) Invoke through the sidecar without an upstream (decide and record only: no forwarding,
 *       no outcome report).
 *
 * Each part runs as it would in a pod: the service and the sidecar are separate processes
 * (`src/service/main.ts`, `sidecar/main.ts`); the load generator and the upstream share this
 * one. Calls are sequential (one agent); the four kinds interleave in rounds so that drift hits
 * them alike; per-round figures give the spread. Two load patterns, both reported:
 *   paced         --gap-ms (10) idle between calls, as an agent that does its own work between
 *                 tool calls: a call's outcome report finishes in the gap, but every process
 *                 wakes from idle for each hop (costly on a VM);
 *   back-to-back  each call right after the previous one: a sustained loop, where the previous
 *                 call's background outcome report competes with the next decision.
 *
 *   npx tsx bench/sidecar-overhead/run.ts [--calls 200] [--rounds 6] [--gap-ms 10] [--profile] [--quick]
 *
 * --quick: a few calls, for correctness (a test runs it). Results go to bench/results/ (see
 * bench/lib/report.ts) like every benchmark's.
 * --profile: runs the sidecar with --cpu-prof into bench/results/profiles/.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import type { Histogram } from "hdr-histogram-js";
import type { InvokeResponse__Output } from "../../sidecar/generated/tollgate/v1/InvokeResponse.js";
import { createGatewayClient } from "../../sidecar/proto.js";
import { createServiceFetch } from "../../sidecar/service-fetch.js";
import { jsonToStruct } from "../../sidecar/struct.js";
import { Chain, createConfig } from "../../src/sdk/index.js";
import { freePort } from "../../test/support/postgres.js";
import { api, benchOrg, repoRoot, startDatabase, startServiceProcess } from "../lib/parts.js";
import { progress, report } from "../lib/report.js";
import { latencyHistogram, median, percentilesMs, type ResultRow, spreadPct } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    calls: { type: "string", default: "200" },
    rounds: { type: "string", default: "6" },
    "gap-ms": { type: "string", default: "10" },
    profile: { type: "boolean", default: false },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const perRound = quick ? 20 : Number(args.calls);
const rounds = quick ? 1 : Number(args.rounds);
/** Paced first: the per-call latency an agent sees; then back to back: a sustained loop. */
const modes: Mode[] = [
  { name: "paced", gapMs: Number(args["gap-ms"]) },
  { name: "back-to-back", gapMs: 0 },
];
const warmup = quick ? 20 : 500;
/** A new chain every so many calls keeps chains at a realistic length. */
const callsPerChain = 200;
const TARGET_P50_MS = 2;
const TARGET_P99_MS = 6;

const payload = { query: "weather in Paris", units: "metric", limit: 5 };

/** The local HTTP tool: echoes the JSON body. */
async function startUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const out = `{"ok":true,"echo":${body || "null"}}`;
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(out) });
      res.end(out);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/tool`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** One direct call: the same request the sidecar's http upstream makes. */
function directCall(url: URL, agent: http.Agent, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: "POST",
        agent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          accept: "application/json",
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          if (res.statusCode !== 200) return reject(new Error(`upstream answered ${res.statusCode}`));
          JSON.parse(Buffer.concat(chunks).toString("utf8"));
          resolve();
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** The sidecar as its own process; resolves when /readyz answers. */
async function startSidecarProcess(opts: {
  serviceUrl: string;
  apiKey: string;
  upstreamUrl: string;
  profileDir: string | null;
}): Promise<{ grpcAddress: string; httpUrl: string; proc: ChildProcess; stop(): Promise<void> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tg-bench-sidecar-"));
  const keyFile = path.join(dir, "api-key");
  writeFileSync(keyFile, opts.apiKey, { mode: 0o600 });
  const [grpcPort, httpPort] = [await freePort(), await freePort()];
  const nodeArgs = opts.profileDir ? ["--cpu-prof", `--cpu-prof-dir=${opts.profileDir}`] : [];
  const proc = spawn(process.execPath, [...nodeArgs, "--import", "tsx", "sidecar/main.ts"], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? "",
      TOLLGATE_SERVICE_URL: opts.serviceUrl,
      TOLLGATE_API_KEY_FILE: keyFile,
      TOLLGATE_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
      TOLLGATE_HTTP_ADDRESS: `127.0.0.1:${httpPort}`,
      TOLLGATE_UPSTREAMS: JSON.stringify([{ name: "tool", type: "http", url: opts.upstreamUrl }]),
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  proc.stderr!.on("data", (d) => (stderr = (stderr + d).slice(-4000)));
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`sidecar exited:\n${stderr}`);
    const ok = await fetch(`${httpUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`sidecar not ready:\n${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    grpcAddress: `127.0.0.1:${grpcPort}`,
    httpUrl,
    proc,
    async stop() {
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Mean of a Prometheus histogram (`name`_sum / `name`_count, all label sets) in ms. */
function meanMs(metrics: string, name: string): number {
  const sum = (suffix: string) =>
    metrics
      .split("\n")
      .filter((l) => l.startsWith(`${name}_${suffix}`))
      .reduce((acc, l) => acc + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
  const count = sum("count");
  return count === 0 ? Number.NaN : (sum("sum") / count) * 1000;
}

const fmt = (ms: number) => `${ms.toFixed(3)} ms`;

async function main() {
  progress(
    `sidecar-overhead: ${rounds} rounds × ${perRound} calls each way, ${warmup} warm-up calls${quick ? " (quick)" : ""}`,
  );
  // Stop the child processes (and PostgreSQL) even when the bench itself is interrupted.
  const stops: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop().catch(() => undefined);
  };
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => void stopAll().finally(() => process.exit(130)));
  }
  const cluster = await startDatabase(["tollgate"]);
  stops.push(() => cluster.stop());
  const svc = await startServiceProcess(cluster.urlOf("tollgate"));
  stops.push(() => svc.stop());
  const upstream = await startUpstream();
  stops.push(() => upstream.close());
  const profileDir = args.profile ? path.join(repoRoot, "bench/results/profiles") : null;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  let sidecar: Awaited<ReturnType<typeof startSidecarProcess>> | null = null;
  try {
    const apiKey = await benchOrg(svc, "bench-sidecar");
    sidecar = await startSidecarProcess({
      serviceUrl: svc.url,
      apiKey,
      upstreamUrl: upstream.url,
      profileDir,
    });
    stops.push(() => sidecar!.stop());
    const client = createGatewayClient(sidecar.grpcAddress);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const url = new URL(upstream.url);
    const body = JSON.stringify(payload);
    const struct = jsonToStruct(payload);

    const unary = <Res>(method: "OpenChain" | "Invoke", req: unknown) =>
      new Promise<Res>((resolve, reject) =>
        (client as unknown as Record<string, (r: unknown, cb: (e: Error | null, v: Res) => void) => void>)[
          method
        ]!(req, (err, res) => (err ? reject(err) : resolve(res))),
      );
    /** Invokes through the sidecar on a chain of its own; `upstream` null: decide only. */
    const sidecarCaller = (upstream: string | null) => {
      const state = { chainId: "", calls: callsPerChain };
      const call = async (h: Histogram | null) => {
        if (state.calls >= callsPerChain) {
          state.chainId = (
            await unary<{ chain_id: string }>("OpenChain", { name: "bench-sidecar-overhead" })
          ).chain_id;
          state.calls = 0;
        }
        state.calls++;
        const t0 = performance.now();
        const r = await unary<InvokeResponse__Output>("Invoke", {
          chain_id: state.chainId,
          agent_name: "bench-agent",
          action_name: "search",
          payload: struct,
          upstream: upstream ?? "",
        });
        const us = Math.round((performance.now() - t0) * 1000);
        if (r.decision?.policy_decision !== "allow" || r.forwarded !== (upstream !== null)) {
          throw new Error(`unexpected result ${JSON.stringify(r)}`);
        }
        h?.recordValue(Math.max(1, us));
      };
      return { call, state };
    };
    const viaSidecar = sidecarCaller("tool");
    const sidecarDecideOnly = sidecarCaller(null);
    const direct = async (h: Histogram | null) => {
      const t0 = performance.now();
      await directCall(url, agent, body);
      h?.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
    };

    const sdkConfig = createConfig(apiKey, { backendUrl: svc.url }, { fetch: createServiceFetch() });
    let sdkChain: Chain | null = null;
    let sdkCalls = callsPerChain;
    const decisionOnly = async (h: Histogram | null) => {
      if (sdkCalls >= callsPerChain) {
        await sdkChain?.exit();
        sdkChain = await new Chain("bench-decision-only", { config: sdkConfig }).enter();
        sdkCalls = 0;
      }
      sdkCalls++;
      const t0 = performance.now();
      const d = await sdkChain!.recordAgentAction("bench-agent", "tool_call", "search", payload);
      h?.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
      if (d.policyDecision !== "allow") throw new Error(`unexpected decision ${d.policyDecision}`);
    };

    for (let i = 0; i < warmup; i++) {
      await direct(null);
      await decisionOnly(null);
      await sidecarDecideOnly.call(null);
      await viaSidecar.call(null);
    }

    /** Interleaved rounds of the four kinds, `gapMs` idle between calls (0: back to back). */
    const measure = async (mode: Mode): Promise<ModeResult> => {
      const kinds = [
        ["direct", direct],
        ["decision", decisionOnly],
        ["sidecarDecide", sidecarDecideOnly.call],
        ["sidecar", viaSidecar.call],
      ] as const;
      const histograms = () => ({
        direct: latencyHistogram(),
        decision: latencyHistogram(),
        sidecarDecide: latencyHistogram(),
        sidecar: latencyHistogram(),
      });
      const all = histograms();
      const perRoundAdded: { p50: number; p99: number }[] = [];
      const pause = () => (mode.gapMs > 0 ? sleep(mode.gapMs) : Promise.resolve());
      for (let r = 0; r < rounds; r++) {
        const round = histograms();
        for (const [kind, fn] of kinds) {
          for (let i = 0; i < perRound; i++) {
            await fn(round[kind]);
            await pause();
          }
          all[kind].add(round[kind]);
        }
        const [d, g, sd, sc] = [round.direct, round.decision, round.sidecarDecide, round.sidecar].map(
          percentilesMs,
        ) as [Percentiles, Percentiles, Percentiles, Percentiles];
        perRoundAdded.push({ p50: sc.p50 - d.p50, p99: sc.p99 - d.p99 });
        progress(
          `  ${mode.name} round ${r + 1}: direct p50 ${fmt(d.p50)} | decision only p50 ${fmt(g.p50)} | sidecar, no tool p50 ${fmt(sd.p50)} | sidecar p50 ${fmt(sc.p50)} p99 ${fmt(sc.p99)} | added p50 ${fmt(sc.p50 - d.p50)} p99 ${fmt(sc.p99 - d.p99)}`,
        );
      }
      const d = percentilesMs(all.direct);
      const sc = percentilesMs(all.sidecar);
      return {
        mode,
        d,
        g: percentilesMs(all.decision),
        sd: percentilesMs(all.sidecarDecide),
        s: sc,
        added: { p50: sc.p50 - d.p50, p99: sc.p99 - d.p99 },
        perRoundAdded,
      };
    };
    const results: ModeResult[] = [];
    for (const mode of modes) results.push(await measure(mode));
    await (sdkChain as Chain | null)?.exit();

    const metrics = await (await fetch(`${sidecar.httpUrl}/metrics`)).text();
    const decisionMean = meanMs(metrics, "tollgate_sidecar_decision_duration_seconds");
    const upstreamMean = meanMs(metrics, "tollgate_sidecar_upstream_duration_seconds");
    client.close();
    agent.destroy();

    // The service recorded every call of the last chain, and bound each outcome.
    await sleep(200);
    const { chainId, calls: chainCalls } = viaSidecar.state;
    const last = (await api(`${svc.url}/v1/chains/${chainId}`, apiKey, "GET")) as {
      events: { outcome: unknown }[];
    };
    const bound = last.events.filter(
      (e) => (e.outcome as { status?: string } | null)?.status === "success",
    ).length;
    if (bound !== last.events.length || bound !== chainCalls) {
      throw new Error(`last chain: ${last.events.length} events, ${bound} outcomes, ${chainCalls} calls`);
    }

    const rows: ResultRow[] = results.flatMap((r) => resultRows(r, rounds));
    for (const r of results) {
      process.stdout.write(
        `== ${r.mode.name} (${r.mode.gapMs > 0 ? `${r.mode.gapMs} ms idle between calls` : "each call right after the previous one"})\n` +
          `direct:          p50 ${fmt(r.d.p50)}  p99 ${fmt(r.d.p99)}  (n=${r.d.count})\n` +
          `decision only:   p50 ${fmt(r.g.p50)}  p99 ${fmt(r.g.p99)}  (n=${r.g.count}; SDK → service, no sidecar, no tool)\n` +
          `through sidecar: p50 ${fmt(r.s.p50)}  p99 ${fmt(r.s.p99)}  (n=${r.s.count})\n` +
          `added:           p50 ${fmt(r.added.p50)} (target ≤ ${TARGET_P50_MS} ms: ${r.added.p50 <= TARGET_P50_MS ? "met" : "MISSED"})  ` +
          `p99 ${fmt(r.added.p99)} (target ≤ ${TARGET_P99_MS} ms: ${r.added.p99 <= TARGET_P99_MS ? "met" : "MISSED"})\n` +
          `sidecar share of the added p50: ${fmt(r.added.p50 - r.g.p50)} (added − decision only), of which ` +
          `${fmt(r.sd.p50 - r.g.p50)} the gRPC hop and the sidecar's own work (sidecar without a tool: p50 ${fmt(r.sd.p50)}) ` +
          `and ${fmt(r.s.p50 - r.sd.p50 - r.d.p50)} forwarding (beyond the direct call) plus the previous call's outcome report\n`,
      );
    }
    process.stdout.write(
      `inside the sidecar (means over the run): decision ${fmt(decisionMean)}, upstream ${fmt(upstreamMean)}\n` +
        `last chain: ${bound} events recorded, every outcome bound\n`,
    );
    const extra = {
      load_average_1m: os.loadavg()[0],
      cpus: os.cpus().length,
      sidecar_mean_decision_ms: decisionMean,
      sidecar_mean_upstream_ms: upstreamMean,
      modes: results.map((r) => ({
        mode: r.mode.name,
        gap_ms: r.mode.gapMs,
        direct: r.d,
        decision_only: r.g,
        sidecar: r.s,
        added: r.added,
        median_round_added_p50_ms: median(r.perRoundAdded.map((x) => x.p50)),
        median_round_added_p99_ms: median(r.perRoundAdded.map((x) => x.p99)),
      })),
    };
    report("sidecar-overhead", rows, { quick, ...extra });
  } finally {
    await stopAll();
  }
}

/** A load pattern: paced (an agent doing its own work between tool calls) or back to back. */
interface Mode {
  name: string;
  gapMs: number;
}

type Percentiles = ReturnType<typeof percentilesMs>;

interface ModeResult {
  mode: Mode;
  d: Percentiles;
  g: Percentiles;
  sd: Percentiles;
  s: Percentiles;
  added: { p50: number; p99: number };
  perRoundAdded: { p50: number; p99: number }[];
}

function resultRows(r: ModeResult, repeats: number): ResultRow[] {
  const row = (
    figure: string,
    value: number,
    baselineValue: number | null,
    target: string,
    met: boolean | null,
    spread: number | null,
  ): ResultRow => ({
    benchmark: "sidecar-overhead",
    figure: `${r.mode.name}: ${figure}`,
    value,
    unit: "ms",
    baseline: baselineValue === null ? "—" : "direct call, same run",
    baselineValue,
    ratio: baselineValue ? value / baselineValue : null,
    better: "lower",
    target,
    met,
    spreadPct: spread,
    repeats,
  });
  return [
    row("direct p50", r.d.p50, null, "—", null, null),
    row("direct p99", r.d.p99, null, "—", null, null),
    row("decision only p50 (SDK → service)", r.g.p50, null, "—", null, null),
    row("decision only p99 (SDK → service)", r.g.p99, null, "—", null, null),
    row("through sidecar, no tool p50 (decide only)", r.sd.p50, null, "—", null, null),
    row("through sidecar p50", r.s.p50, r.d.p50, "—", null, null),
    row("through sidecar p99", r.s.p99, r.d.p99, "—", null, null),
    row(
      "added p50",
      r.added.p50,
      null,
      `≤ ${TARGET_P50_MS} ms`,
      r.added.p50 <= TARGET_P50_MS,
      spreadPct(r.perRoundAdded.map((x) => x.p50)),
    ),
    row(
      "added p99",
      r.added.p99,
      null,
      `≤ ${TARGET_P99_MS} ms`,
      r.added.p99 <= TARGET_P99_MS,
      spreadPct(r.perRoundAdded.map((x) => x.p99)),
    ),
  ];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
