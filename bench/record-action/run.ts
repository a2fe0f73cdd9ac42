/**
 * bench/record-action: recorded actions per second and p99 latency of
 * POST /v1/chains/{id}/actions at N concurrent clients (closed loop), against the service on
 * real PostgreSQL, beside pgbench's single-row INSERT TPS on the same server with the same
 * number of clients, measured in the same run. Repeats and reports medians and spread.
 *
 *   npx tsx bench/record-action/run.ts [--clients 16,32] [--seconds 10] [--repeats 3] [--quick]
 */
import { parseArgs } from "node:util";
import { benchClient } from "../lib/http.js";
import { api, benchOrg, startDatabase, startServiceProcess } from "../lib/parts.js";
import { pgbenchInsert } from "../lib/pgbench.js";
import { progress, report } from "../lib/report.js";
import { latencyHistogram, median, percentilesMs, type ResultRow, spreadPct } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    clients: { type: "string", default: "16,32" },
    seconds: { type: "string", default: "10" },
    repeats: { type: "string", default: "3" },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const clientCounts = (quick ? "4" : args.clients!).split(",").map(Number);
const seconds = quick ? 2 : Number(args.seconds);
const repeats = quick ? 1 : Number(args.repeats);
const targets: Record<number, number> = { 16: 0.5, 32: 0.4 };

/** Drives `clients` closed-loop recorders for `seconds`; returns actions/s and latency. */
async function load(url: string, key: string, clients: number, secs: number) {
  const hist = latencyHistogram();
  let errors = 0;
  const chains = await Promise.all(
    Array.from({ length: clients }, () => api(`${url}/v1/chains`, key, "POST", { name: "bench-record" })),
  );
  const body = JSON.stringify({
    agent_name: "bench",
    action_type: "tool_call",
    action_name: "read_file",
    payload: { path: "/data/x.txt" },
  });
  const headers = { authorization: `Bearer ${key}` };
  const client = benchClient(url, clients);
  const start = performance.now();
  const end = start + secs * 1000;
  await Promise.all(
    chains.map(async (c) => {
      const target = `/v1/chains/${c.chain_id}/actions`;
      while (performance.now() < end) {
        const t0 = performance.now();
        const r = await client.request("POST", target, headers, body);
        if (r.status !== 200) errors++;
        hist.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  client.close();
  const p = percentilesMs(hist);
  return { perSecond: p.count / elapsed, p50: p.p50, p99: p.p99, errors };
}

async function main() {
  progress(`record-action: clients ${clientCounts.join(",")}, ${seconds}s per run, ${repeats} repeats`);
  const cluster = await startDatabase(["tollgate", "pgbench"]);
  const svc = await startServiceProcess(cluster.urlOf("tollgate"));
  const rows: ResultRow[] = [];
  try {
    const key = await benchOrg(svc, "bench");
    await load(svc.url, key, 4, 1); // warm-up: JIT, pools, config cache
    for (const clients of clientCounts) {
      const runs: { tps: number; rps: number; p99: number; p50: number; errors: number }[] = [];
      for (let i = 0; i < repeats; i++) {
        const base = pgbenchInsert(cluster, "pgbench", clients, seconds);
        const r = await load(svc.url, key, clients, seconds);
        runs.push({ tps: base.tps, rps: r.perSecond, p99: r.p99, p50: r.p50, errors: r.errors });
        progress(
          `  ${clients} clients, run ${i + 1}: pgbench ${base.tps.toFixed(0)} tps; service ${r.perSecond.toFixed(0)} actions/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, errors ${r.errors}`,
        );
      }
      const ratios = runs.map((r) => r.rps / r.tps);
      const rps = median(runs.map((r) => r.rps));
      const tps = median(runs.map((r) => r.tps));
      const p99 = median(runs.map((r) => r.p99));
      const target = targets[clients] ?? 0.4;
      rows.push({
        benchmark: "record-action",
        figure: `actions/s at ${clients} clients`,
        value: rps,
        unit: "/s",
        baseline: "pgbench insert-only TPS",
        baselineValue: tps,
        ratio: median(ratios),
        better: "higher",
        target: `≥ ${target}× TPS`,
        met: median(ratios) >= target,
        spreadPct: spreadPct(ratios),
        repeats,
      });
      rows.push({
        benchmark: "record-action",
        figure: `p99 at ${clients} clients`,
        value: p99,
        unit: "ms",
        baseline: "—",
        baselineValue: null,
        ratio: null,
        better: "lower",
        target: "≤ 25 ms",
        met: p99 <= 25,
        spreadPct: spreadPct(runs.map((r) => r.p99)),
        repeats,
      });
      if (runs.some((r) => r.errors > 0))
        throw new Error(`record-action: ${runs.map((r) => r.errors).join(",")} failed requests`);
    }
  } finally {
    await svc.stop();
    await cluster.stop();
  }
  report("record-action", rows);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
