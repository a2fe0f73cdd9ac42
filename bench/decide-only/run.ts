/**
 * bench/decide-only: requests per second of the service's decision route,
 * POST /v1/chains/{chain_id}/actions/evaluate (authenticate, read the chain with its
 * organization and key check in one query, run the policy engine; nothing recorded), on real
 * PostgreSQL, beside a bare Fastify hello-world JSON POST measured with the same load client,
 * the same concurrency, in the same run. Target ≥ 0.6× the hello-world rate (issue 30).
 *
 * Floor (hello.ts --read), same client, same run: the same bare Fastify server whose evaluate
 * route reads the chain row with its organization from the service's database (one prepared
 * SELECT per request) — what any decision that reads the chain's current state pays on this
 * machine before authenticating, validating or deciding; its ratio to the hello-world is the most
 * the service can reach with one read per decision.
 *
 * Variant "50 CEL rules" (issue 28): the same route for an organization whose policy has 50
 * custom rules with a CEL `expression` and no other matcher, so every expression is evaluated
 * for every action (the worst case: matchers would skip most of them), all false for the benched
 * action; measured in the same run beside the organization without custom rules.
 * Target ≥ 0.8× the no-custom-rules rate.
 *
 * `--profile` runs the service with --cpu-prof into bench/results/profiles/decide-only/ (the
 * profile covers both organizations' runs; bench/HISTORY.md lists its top frames).
 *
 *   npx tsx bench/decide-only/run.ts [--clients 16] [--seconds 5] [--repeats 3] [--quick] [--profile]
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
    profile: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const clients = quick ? 4 : Number(args.clients);
const seconds = quick ? 1 : Number(args.seconds);
const repeats = quick ? 1 : Number(args.repeats);
const TARGET = 0.6; // issue 30 (was 0.4, issue 2)
const CEL_TARGET = 0.8;
const CEL_RULES = 50;
const profileDir = "bench/results/profiles/decide-only";
const nodeArgs = args.profile ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];

/** 50 expression-only rules, a mix of action, payload and chain reads; none holds for the benched action. */
const celRules = Array.from({ length: CEL_RULES }, (_, i) => {
  const expression = [
    `action.name == "tool_${i}" && action.agentName == "bench"`,
    `action.payload.path.startsWith("/restricted/${i}/")`,
    `chain.eventCount > ${1_000_000 + i} || action.type == "llm_call_${i}"`,
    `"never_${i}" in action.destinationDomains`,
    `action.name.matches("^admin_${i}_.*$")`,
  ][i % 5];
  return { name: `cel-${i}`, expression, outcome: "deny", reason: `CEL rule ${i}` };
});

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
  const svc = await startServiceProcess(cluster.urlOf("tollgate"), {}, nodeArgs);
  const hello = await startScript("bench/decide-only/hello.ts");
  const floor = await startScript("bench/decide-only/hello.ts", ["--read"], {
    DATABASE_URL: cluster.urlOf("tollgate"),
  });
  try {
    const key = await benchOrg(svc, "bench");
    const celKey = await benchOrg(svc, "bench-cel");
    await api(`${svc.url}/v1/admin/organizations/bench-cel/policies/cel`, svc.adminToken, "PUT", {
      config: { custom_rules: celRules },
    });
    const openChains = (k: string) =>
      Promise.all(
        Array.from({ length: clients }, () =>
          api(`${svc.url}/v1/chains`, k, "POST", { name: "bench-decide" }),
        ),
      );
    const chains = await openChains(key);
    const celChains = await openChains(celKey);
    const action = JSON.stringify({
      agent_name: "bench",
      action_type: "tool_call",
      action_name: "read_file",
      payload: { path: "/data/x.txt" },
    });
    const auth = { authorization: `Bearer ${key}` };
    const decide = (secs: number) =>
      load(svc.url, (i) => `/v1/chains/${chains[i].chain_id}/actions/evaluate`, auth, action, secs);
    const celAuth = { authorization: `Bearer ${celKey}` };
    const decideCel = (secs: number) =>
      load(svc.url, (i) => `/v1/chains/${celChains[i].chain_id}/actions/evaluate`, celAuth, action, secs);
    const baseline = (secs: number) => load(hello.address, () => "/hello", {}, action, secs);
    const readFloor = (secs: number) =>
      load(floor.address, (i) => `/v1/chains/${chains[i].chain_id}/actions/evaluate`, {}, action, secs);
    await decide(1); // warm-up: JIT, pool, caches
    await decideCel(1);
    await baseline(1);
    await readFloor(1);
    // Every CEL rule is evaluated and none holds: the decision must be the no-rules one.
    const celDecision = await api(
      `${svc.url}/v1/chains/${celChains[0].chain_id}/actions/evaluate`,
      celKey,
      "POST",
      JSON.parse(action),
    );
    if (celDecision.policy_decision !== "allow")
      throw new Error(`CEL variant decided ${JSON.stringify(celDecision)}`);
    const runs: { decide: number; hello: number; cel: number; floor: number }[] = [];
    // The two organizations alternate in one-second slices (the machine's load drifts between
    // slices, not within one), so each repeat's CEL ratio compares like with like.
    const slices = Math.max(1, Math.round(seconds));
    for (let i = 0; i < repeats; i++) {
      const h = await baseline(seconds);
      const f = await readFloor(seconds);
      let d = 0;
      let c = 0;
      for (let s = 0; s < slices; s++) {
        d += await decide(seconds / slices);
        c += await decideCel(seconds / slices);
      }
      d /= slices;
      c /= slices;
      runs.push({ decide: d, hello: h, cel: c, floor: f });
      progress(
        `  run ${i + 1}: hello-world ${h.toFixed(0)} req/s; floor (one read per request) ${f.toFixed(0)} req/s (${(f / h).toFixed(3)}); decide-only ${d.toFixed(0)} req/s; ratio ${(d / h).toFixed(3)} (${(d / f).toFixed(3)} of the floor); with ${CEL_RULES} CEL rules ${c.toFixed(0)} req/s, ratio to no custom rules ${(c / d).toFixed(3)}`,
      );
    }
    const ratios = runs.map((r) => r.decide / r.hello);
    const celRatios = runs.map((r) => r.cel / r.decide);
    const floorRatios = runs.map((r) => r.floor / r.hello);
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
      {
        benchmark: "decide-only",
        figure: `evaluate req/s with ${CEL_RULES} CEL rules (all evaluated) at ${clients} clients`,
        value: median(runs.map((r) => r.cel)),
        unit: "/s",
        baseline: "evaluate req/s without custom rules",
        baselineValue: median(runs.map((r) => r.decide)),
        ratio: median(celRatios),
        better: "higher",
        target: `≥ ${CEL_TARGET}×`,
        met: median(celRatios) >= CEL_TARGET,
        spreadPct: spreadPct(celRatios),
        repeats,
      },
      {
        benchmark: "decide-only",
        figure: `floor: bare Fastify + one chain read per request at ${clients} clients`,
        value: median(runs.map((r) => r.floor)),
        unit: "/s",
        baseline: "bare Fastify hello-world req/s",
        baselineValue: median(runs.map((r) => r.hello)),
        ratio: median(floorRatios),
        better: "higher",
        target: "—",
        met: null,
        spreadPct: spreadPct(floorRatios),
        repeats,
      },
    ];
    report("decide-only", rows);
  } finally {
    await floor.stop();
    await hello.stop();
    await svc.stop();
    await cluster.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
