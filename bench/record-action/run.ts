/**
 * bench/record-action: recorded actions per second and p99 latency of
 * POST /v1/chains/{id}/actions at N concurrent clients (closed loop, wrk: bench/lib/wrk.ts),
 * against the service on real PostgreSQL (the production bundle, as the image runs it), beside pgbench's single-row INSERT TPS on the same
 * server with the same number of clients, measured in the same run. Target (issue 2): ratio
 * ≥ 0.4 at 32 clients (≥ 0.5 at 16), p99 ≤ 25 ms.
 *
 * Two floors, measured with the same client in the same run, show where the rest goes
 * (minimal.ts): a bare Fastify + `pg` server doing one INSERT per request, and the same server
 * with group commit (what the service's RecordBatcher does) — a service with nothing of its own
 * to do. Each client count is repeated; medians and spread are reported.
 *
 * The load: --chains-per-client chains per client (default 4), taken round-robin by wrk's one
 * thread, so that a chain rarely has two actions in flight (a chain's actions are serialized;
 * when two meet, the guarded write retries the second, as it would for an agent).
 *
 *   npx tsx bench/record-action/run.ts [--clients 16,32] [--seconds 10] [--repeats 3] [--quick]
 */
import { rmSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  api,
  benchOrg,
  buildBundles,
  startDatabase,
  startScript,
  startServiceProcess,
} from "../lib/parts.js";
import { pgbenchInsert } from "../lib/pgbench.js";
import { progress, report } from "../lib/report.js";
import { median, type ResultRow, spreadPct } from "../lib/stats.js";
import { requireWrk, runWrk, type WrkPost, type WrkResult } from "../lib/wrk.js";

const { values: args } = parseArgs({
  options: {
    clients: { type: "string", default: "16,32" },
    seconds: { type: "string", default: "10" },
    repeats: { type: "string", default: "3" },
    "chains-per-client": { type: "string", default: "4" },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const clientCounts = (quick ? "4" : args.clients!).split(",").map(Number);
const seconds = quick ? 1 : Number(args.seconds);
const repeats = quick ? 1 : Number(args.repeats);
const chainsPerClient = Number(args["chains-per-client"]);
const targets: Record<number, number> = { 16: 0.5, 32: 0.4 };
const P99_TARGET_MS = 25;

const action = JSON.stringify({
  agent_name: "bench",
  action_type: "tool_call",
  action_name: "read_file",
  payload: { path: "/data/x.txt" },
});

/** One repeat at one client count. */
interface Run {
  tps: number;
  service: WrkResult;
  minimal: WrkResult;
  groupCommit: WrkResult;
}

async function main() {
  requireWrk();
  progress(
    `record-action: clients ${clientCounts.join(",")}, ${seconds}s per run, ${repeats} repeats (load client: wrk)`,
  );
  const build = buildBundles();
  const cluster = await startDatabase(["tollgate", "pgbench", "minimal"]);
  const svc = await startServiceProcess(cluster.urlOf("tollgate"), {}, [], [path.join(build, "service.js")]);
  const floorEnv = { DATABASE_URL: cluster.urlOf("minimal") };
  const minimal = await startScript("bench/record-action/minimal.ts", [], floorEnv);
  const groupCommit = await startScript("bench/record-action/minimal.ts", ["--group-commit"], floorEnv);
  const rows: ResultRow[] = [];
  try {
    const key = await benchOrg(svc, "bench");
    const chainCount = Math.max(...clientCounts) * chainsPerClient;
    const chains: { chain_id: string }[] = [];
    for (let i = 0; i < chainCount; i++) {
      chains.push(await api(`${svc.url}/v1/chains`, key, "POST", { name: "bench-record" }));
    }
    const load: WrkPost = {
      paths: chains.map((c) => `/v1/chains/${c.chain_id}/actions`),
      headers: { authorization: `Bearer ${key}` },
      body: action,
    };
    const floorLoad: WrkPost = { ...load, headers: {} };
    // Warm-up: JIT, pools, caches, prepared statements.
    runWrk(svc.url, load, 4, 1);
    runWrk(minimal.address, floorLoad, 4, 1);
    runWrk(groupCommit.address, floorLoad, 4, 1);
    for (const clients of clientCounts) {
      const runs: Run[] = [];
      for (let i = 0; i < repeats; i++) {
        const base = pgbenchInsert(cluster, "pgbench", clients, seconds);
        const service = runWrk(svc.url, load, clients, seconds);
        const min = runWrk(minimal.address, floorLoad, clients, seconds);
        const gc = runWrk(groupCommit.address, floorLoad, clients, seconds);
        runs.push({ tps: base.tps, service, minimal: min, groupCommit: gc });
        const r = (w: WrkResult) => `${w.perSecond.toFixed(0)}/s (${(w.perSecond / base.tps).toFixed(3)})`;
        progress(
          `  ${clients} clients, run ${i + 1}: pgbench ${base.tps.toFixed(0)} tps; service ${r(service)}, p50 ${service.p50.toFixed(2)} ms, p99 ${service.p99.toFixed(2)} ms, errors ${service.errors}; floors: one INSERT per request ${r(min)}, group commit ${r(gc)}`,
        );
      }
      const failed = runs.flatMap((r) => [r.service, r.minimal, r.groupCommit]).filter((w) => w.errors > 0);
      if (failed.length) throw new Error(`record-action: failed requests in ${failed.length} runs`);
      rows.push(...clientRows(clients, runs));
    }
  } finally {
    await groupCommit.stop();
    await minimal.stop();
    await svc.stop();
    await cluster.stop();
    rmSync(build, { recursive: true, force: true });
  }
  report("record-action", rows);
}

/** The result rows of one client count. */
function clientRows(clients: number, runs: Run[]): ResultRow[] {
  const tps = median(runs.map((r) => r.tps));
  const ratioRow = (figure: string, of: (r: Run) => WrkResult, target: number | null): ResultRow => {
    const ratios = runs.map((r) => of(r).perSecond / r.tps);
    return {
      benchmark: "record-action",
      figure,
      value: median(runs.map((r) => of(r).perSecond)),
      unit: "/s",
      baseline: "pgbench insert-only TPS",
      baselineValue: tps,
      ratio: median(ratios),
      better: "higher",
      target: target === null ? "—" : `≥ ${target}× TPS`,
      met: target === null ? null : median(ratios) >= target,
      spreadPct: spreadPct(ratios),
      repeats: runs.length,
    };
  };
  const p99s = runs.map((r) => r.service.p99);
  return [
    ratioRow(`actions/s at ${clients} clients`, (r) => r.service, targets[clients] ?? 0.4),
    {
      benchmark: "record-action",
      figure: `p99 at ${clients} clients`,
      value: median(p99s),
      unit: "ms",
      baseline: "—",
      baselineValue: null,
      ratio: null,
      better: "lower",
      target: `≤ ${P99_TARGET_MS} ms`,
      met: median(p99s) <= P99_TARGET_MS,
      spreadPct: spreadPct(p99s),
      repeats: runs.length,
    },
    ratioRow(`floor: bare Fastify + one INSERT per request, ${clients} clients`, (r) => r.minimal, null),
    ratioRow(`floor: bare Fastify + group commit, ${clients} clients`, (r) => r.groupCommit, null),
  ];
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
