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
 *       to the service (same transport as the sidecar), no sidecar and no tool.
 *
 * Each part runs as it would in a pod: the service and the sidecar are separate processes
 * (`src/service/main.ts`, `sidecar/main.ts`); the load generator and the upstream share this
 * one. Calls are sequential (one agent), direct and sidecar rounds interleave so that drift hits
 * both alike; per-round figures give the spread.
 *
 *   npx tsx bench/sidecar-overhead/run.ts [--calls 300] [--rounds 10] [--profile] [--quick]
 *
 * --quick: a few calls, for correctness (a test runs it); results are printed, not saved.
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
import {
  latencyHistogram,
  markdownTable,
  median,
  percentilesMs,
  type ResultRow,
  spreadPct,
} from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    calls: { type: "string", default: "300" },
    rounds: { type: "string", default: "10" },
    profile: { type: "boolean", default: false },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const perRound = quick ? 20 : Number(args.calls);
const rounds = quick ? 2 : Number(args.rounds);
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
    if (Date.now() > deadline) throw new Error(`sidecar not ready:\n${stderr}`);
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
  const cluster = await startDatabase(["tollgate"]);
  const svc = await startServiceProcess(cluster.urlOf("tollgate"));
  const upstream = await startUpstream();
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
    const client = createGatewayClient(sidecar.grpcAddress);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const url = new URL(upstream.url);
    const body = JSON.stringify(payload);
    const struct = jsonToStruct(payload);

    let chainId = "";
    let chainCalls = callsPerChain;
    const unary = <Res>(method: "OpenChain" | "Invoke", req: unknown) =>
      new Promise<Res>((resolve, reject) =>
        (client as unknown as Record<string, (r: unknown, cb: (e: Error | null, v: Res) => void) => void>)[
          method
        ]!(req, (err, res) => (err ? reject(err) : resolve(res))),
      );
    const viaSidecar = async (h: Histogram | null) => {
      if (chainCalls >= callsPerChain) {
        chainId = (await unary<{ chain_id: string }>("OpenChain", { name: "bench-sidecar-overhead" }))
          .chain_id;
        chainCalls = 0;
      }
      chainCalls++;
      const t0 = performance.now();
      const r = await unary<InvokeResponse__Output>("Invoke", {
        chain_id: chainId,
        agent_name: "bench-agent",
        action_name: "search",
        payload: struct,
        upstream: "tool",
      });
      const us = Math.round((performance.now() - t0) * 1000);
      if (r.decision?.policy_decision !== "allow" || !r.forwarded)
        throw new Error(`unexpected result ${JSON.stringify(r)}`);
      h?.recordValue(Math.max(1, us));
    };
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
      await viaSidecar(null);
    }

    const all = { direct: latencyHistogram(), decision: latencyHistogram(), sidecar: latencyHistogram() };
    const perRoundAdded: { p50: number; p99: number }[] = [];
    for (let r = 0; r < rounds; r++) {
      const round = { direct: latencyHistogram(), decision: latencyHistogram(), sidecar: latencyHistogram() };
      for (let i = 0; i < perRound; i++) await direct(round.direct);
      for (let i = 0; i < perRound; i++) await decisionOnly(round.decision);
      for (let i = 0; i < perRound; i++) await viaSidecar(round.sidecar);
      all.direct.add(round.direct);
      all.decision.add(round.decision);
      all.sidecar.add(round.sidecar);
      const d = percentilesMs(round.direct);
      const g = percentilesMs(round.decision);
      const s = percentilesMs(round.sidecar);
      perRoundAdded.push({ p50: s.p50 - d.p50, p99: s.p99 - d.p99 });
      progress(
        `  round ${r + 1}: direct p50 ${fmt(d.p50)} p99 ${fmt(d.p99)} | decision only p50 ${fmt(g.p50)} p99 ${fmt(g.p99)} | sidecar p50 ${fmt(s.p50)} p99 ${fmt(s.p99)} | added p50 ${fmt(s.p50 - d.p50)} p99 ${fmt(s.p99 - d.p99)}`,
      );
    }
    await (sdkChain as Chain | null)?.exit();

    const metrics = await (await fetch(`${sidecar.httpUrl}/metrics`)).text();
    const decisionMean = meanMs(metrics, "tollgate_sidecar_decision_duration_seconds");
    const upstreamMean = meanMs(metrics, "tollgate_sidecar_upstream_duration_seconds");
    client.close();
    agent.destroy();

    // The service recorded every call of the last chain, and bound each outcome.
    await new Promise((r) => setTimeout(r, 200));
    const last = (await api(`${svc.url}/v1/chains/${chainId}`, apiKey, "GET")) as {
      events: { outcome: unknown }[];
    };
    const bound = last.events.filter(
      (e) => (e.outcome as { status?: string } | null)?.status === "success",
    ).length;
    if (bound !== last.events.length || bound !== chainCalls) {
      throw new Error(`last chain: ${last.events.length} events, ${bound} outcomes, ${chainCalls} calls`);
    }

    const d = percentilesMs(all.direct);
    const g = percentilesMs(all.decision);
    const s = percentilesMs(all.sidecar);
    const added = { p50: s.p50 - d.p50, p99: s.p99 - d.p99 };
    const n = rounds;
    const row = (
      figure: string,
      value: number,
      baselineValue: number | null,
      target: string,
      met: boolean | null,
      spread: number | null,
    ): ResultRow => ({
      benchmark: "sidecar-overhead",
      figure,
      value,
      unit: "ms",
      baseline: baselineValue === null ? "—" : "direct call, same run",
      baselineValue,
      ratio: baselineValue ? value / baselineValue : null,
      better: "lower",
      target,
      met,
      spreadPct: spread,
      repeats: n,
    });
    const rows: ResultRow[] = [
      row("direct p50", d.p50, null, "—", null, null),
      row("direct p99", d.p99, null, "—", null, null),
      row("decision only p50 (SDK → service)", g.p50, null, "—", null, null),
      row("decision only p99 (SDK → service)", g.p99, null, "—", null, null),
      row("through sidecar p50", s.p50, d.p50, "—", null, null),
      row("through sidecar p99", s.p99, d.p99, "—", null, null),
      row(
        "added p50",
        added.p50,
        null,
        `≤ ${TARGET_P50_MS} ms`,
        added.p50 <= TARGET_P50_MS,
        spreadPct(perRoundAdded.map((x) => x.p50)),
      ),
      row(
        "added p99",
        added.p99,
        null,
        `≤ ${TARGET_P99_MS} ms`,
        added.p99 <= TARGET_P99_MS,
        spreadPct(perRoundAdded.map((x) => x.p99)),
      ),
    ];
    const extra = {
      calls_each_way: d.count,
      sidecar_mean_decision_ms: decisionMean,
      sidecar_mean_upstream_ms: upstreamMean,
      decision_only_p50_ms: g.p50,
      decision_only_p99_ms: g.p99,
      median_round_added_p50_ms: median(perRoundAdded.map((x) => x.p50)),
      median_round_added_p99_ms: median(perRoundAdded.map((x) => x.p99)),
    };
    process.stdout.write(
      `direct:          p50 ${fmt(d.p50)}  p99 ${fmt(d.p99)}  (n=${d.count})\n` +
        `through sidecar: p50 ${fmt(s.p50)}  p99 ${fmt(s.p99)}  (n=${s.count})\n` +
        `decision only:   p50 ${fmt(g.p50)}  p99 ${fmt(g.p99)}  (n=${g.count}; SDK → service, no sidecar, no tool)\n` +
        `added:           p50 ${fmt(added.p50)} (target ≤ ${TARGET_P50_MS} ms: ${added.p50 <= TARGET_P50_MS ? "met" : "MISSED"})  ` +
        `p99 ${fmt(added.p99)} (target ≤ ${TARGET_P99_MS} ms: ${added.p99 <= TARGET_P99_MS ? "met" : "MISSED"})\n` +
        `sidecar share of the added p50: ${fmt(added.p50 - g.p50)} (added − decision only)\n` +
        `inside the sidecar (means): decision ${fmt(decisionMean)}, upstream ${fmt(upstreamMean)}\n` +
        `last chain: ${bound} events recorded, every outcome bound\n`,
    );
    if (quick) process.stdout.write(`\n${markdownTable(rows)}\n`);
    else report("sidecar-overhead", rows, extra);
  } finally {
    await sidecar?.stop();
    await upstream.close();
    await svc.stop();
    await cluster.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
