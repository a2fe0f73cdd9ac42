/**
 * bench/decide-only: requests per second of the service's decision route,
 * POST /v1/chains/{chain_id}/actions/evaluate (authenticate, read the chain with its
 * organization and key check in one query, run the policy engine; nothing recorded), on real
 * PostgreSQL, beside a bare Fastify hello-world JSON POST measured with the same load client,
 * the same concurrency, in the same run. Target ≥ 0.4× the hello-world rate.
 *
 *   npx tsx bench/decide-only/run.ts [--clients 16] [--seconds 5] [--repeats 3] [--quick]
 */
import { parseArgs } from "node:util";
import { benchClient } from "../lib/http.js";
import { api, benchOrg, startDatabase, startScript, startServiceProcess } from "../lib/parts.js";
import { progress, report } from "../lib/report.js";
import { median, type ResultRow, spreadPct } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    clients: { type: "string", default: "16" },
    seconds: { type: "string", default: "5" },
    repeats: { type: "string", default: "3" },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const clients = quick ? 4 : Number(args.clients);
const seconds = quick ? 1 : Number(args.seconds);
const repeats = quick ? 1 : Number(args.repeats);
const TARGET = 0.4;

/** Closed-loop load: `clients` callers each send `body` to `pathOf(i)` for `secs`; returns req/s. */
async function load(
  origin: string,
  pathOf: (i: number) => string,
  headers: Record<string, string>,
  body: string,
  secs: number,
): Promise<number> {
  const client = benchClient(origin, clients);
  let done = 0;
  const end = performance.now() + secs * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      while (performance.now() < end) {
        const r = await client.request("POST", pathOf(i), headers, body);
        if (r.status !== 200) throw new Error(`${pathOf(i)} → ${r.status}: ${r.body}`);
        done++;
      }
    }),
  );
  client.close();
  return done / ((performance.now() - start) / 1000);
}

async function main() {
  progress(`decide-only: ${clients} clients, ${seconds}s per run, ${repeats} repeats`);
  const cluster = await startDatabase(["tollgate"]);
  const svc = await startServiceProcess(cluster.urlOf("tollgate"));
  const hello = await startScript("bench/decide-only/hello.ts");
  try {
    const key = await benchOrg(svc, "bench");
    const chains = await Promise.all(
      Array.from({ length: clients }, () =>
        api(`${svc.url}/v1/chains`, key, "POST", { name: "bench-decide" }),
      ),
    );
    const action = JSON.stringify({
      agent_name: "bench",
      action_type: "tool_call",
      action_name: "read_file",
      payload: { path: "/data/x.txt" },
    });
    const auth = { authorization: `Bearer ${key}` };
    const decide = (secs: number) =>
      load(svc.url, (i) => `/v1/chains/${chains[i].chain_id}/actions/evaluate`, auth, action, secs);
    const baseline = (secs: number) => load(hello.address, () => "/hello", {}, action, secs);
    await decide(1); // warm-up: JIT, pool, caches
    await baseline(1);
    const runs: { decide: number; hello: number }[] = [];
    for (let i = 0; i < repeats; i++) {
      const h = await baseline(seconds);
      const d = await decide(seconds);
      runs.push({ decide: d, hello: h });
      progress(
        `  run ${i + 1}: hello-world ${h.toFixed(0)} req/s; decide-only ${d.toFixed(0)} req/s; ratio ${(d / h).toFixed(3)}`,
      );
    }
    const ratios = runs.map((r) => r.decide / r.hello);
    const rows: ResultRow[] = [
      {
        benchmark: "decide-only",
        figure: `evaluate req/s at ${clients} clients`,
        value: median(runs.map((r) => r.decide)),
        unit: "/s",
        baseline: "bare Fastify hello-world req/s",
        baselineValue: median(runs.map((r) => r.hello)),
        ratio: median(ratios),
        better: "higher",
        target: `≥ ${TARGET}×`,
        met: median(ratios) >= TARGET,
        spreadPct: spreadPct(ratios),
        repeats,
      },
    ];
    report("decide-only", rows);
  } finally {
    await hello.stop();
    await svc.stop();
    await cluster.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
