/**
 * bench/capacity: how many agents one service process and one PostgreSQL carry, and where one
 * organization's receipt chain stops scaling (issue 32, "Capacity"). Parts as the image runs
 * them: the production build (`node dist/service.js`, NODE_ENV=production, the chart's
 * NODE_OPTIONS) on one real PostgreSQL (the test suite's settings, fsync off; --durable for
 * PostgreSQL's defaults). The load client talks to the service over HTTP as the sidecars do
 * (node:http keep-alive, bench/lib/http.ts), in this process. Three parts (--parts):
 *
 * - ramp: simulated agents, each making --agent-rate governed calls per second, open loop with
 *   coordinated omission corrected (bench/lib/rate.ts); an agent's calls run one after another,
 *   as an agent waits for its tool call. A governed call is what a sidecar sends: record the
 *   action (POST /v1/chains/{id}/actions: authenticate, decide, record; every EVALUATE_EVERY-th
 *   call is preceded by a decision without recording, POST .../actions/evaluate) and report its
 *   outcome (POST /v1/outcomes); every CALLS_PER_CHAIN calls the agent completes its chain (the
 *   service builds, signs and appends the receipt) and opens a new one. Agents spread over
 *   RAMP_ORGS organizations. After WARMUP_SECONDS of unmeasured load, the number of agents
 *   doubles per step (--agents) until a step is saturated: a failed call, an achieved rate below
 *   95% of the intended one, or a decision p99 over SATURATED_P99_MS. Two knees: the SLO knee,
 *   the last step before the first with decision p99 (intended start → decision answer) over
 *   --slo-ms; the throughput knee, the last step not saturated. Each with agents, calls/s, and
 *   the CPU time per call of the service and of PostgreSQL (/proc, over the step).
 * - chain: one organization's receipt log grown to each --lengths mark (by --writers concurrent
 *   writers completing empty chains); at each mark, sequentially: receipt append (complete a
 *   one-action chain: the time of POST .../complete, which holds the organization's receipt-log
 *   lock), verification of the newest receipt (GET /v1/verification/v2/receipts/{id}), and the
 *   whole chain exported (GET /v1/receipts/export, pages of 1,000) and verified offline as
 *   `tollgate verify` does (src/cli/verify-export.ts). Append O(1) shows as the append p50 at
 *   the longest mark over the shortest (ratio ~1); the whole-chain cost per receipt likewise.
 * - spread: receipts per second of --writers closed-loop writers (each: open a chain, record one
 *   action, complete it) all in one organization, beside the same writers each in its own
 *   organization, and one writer alone: where the per-organization chain head serializes.
 *
 *   npx tsx bench/capacity/run.ts [--parts ramp,chain,spread] [--agents 8,16,32,...]
 *     [--agent-rate 1] [--step-seconds 20] [--slo-ms 50] [--lengths 1000,10000,100000]
 *     [--writers 8] [--spread-seconds 15] [--durable] [--quick]
 *
 * --quick: the small correctness run the tests use (two ramp steps of 2 and 4 agents for 3 s,
 * two calls per chain, chain marks 20 and 60, 2 writers for 2 s). Rows in bench/results/capacity.json, with each
 * step and mark in the same file.
 */
import { rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { importJwks, KeysSource, verifyExport } from "../../src/cli/verify-export.js";
import { benchClient } from "../lib/http.js";
import { api, benchOrg, buildBundles, startDatabase, startServiceProcess, teardown } from "../lib/parts.js";
import { clusterCpuUs, cpuSeconds } from "../lib/proc.js";
import { runAtRate } from "../lib/rate.js";
import { progress, report } from "../lib/report.js";
import { SERVICE_NODE_OPTIONS } from "../lib/service-flags.js";
import { infoRow, latencyHistogram, percentilesMs, type ResultRow } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    parts: { type: "string", default: "ramp,chain,spread" },
    agents: { type: "string" },
    "agent-rate": { type: "string", default: "1" },
    "step-seconds": { type: "string" },
    "slo-ms": { type: "string", default: "50" },
    lengths: { type: "string" },
    writers: { type: "string" },
    "spread-seconds": { type: "string" },
    durable: { type: "boolean", default: false },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
/** A comma-separated list of positive numbers. @throws RangeError naming the flag. */
const list = (flag: string, given: string | undefined, full: string, small: string) => {
  const xs = (given ?? (quick ? small : full)).split(",").map(Number);
  if (!xs.every((x) => x > 0)) throw new RangeError(`--${flag} takes positive numbers, got ${given}`);
  return xs;
};
const num = (flag: string, given: string | undefined, full: string, small: string) =>
  list(flag, given, full, small)[0]!;
const parts = new Set(args.parts!.split(","));
for (const part of parts)
  if (!["ramp", "chain", "spread"].includes(part)) throw new RangeError(`--parts: unknown part ${part}`);
const agentSteps = list("agents", args.agents, "8,16,32,64,128,256,512,1024", "2,4");
const agentRate = num("agent-rate", args["agent-rate"], "1", "1");
const stepSeconds = num("step-seconds", args["step-seconds"], "20", "3");
const sloMs = num("slo-ms", args["slo-ms"], "50", "50");
const lengths = list("lengths", args.lengths, "1000,10000,100000", "20,60");
const writers = num("writers", args.writers, "8", "2");
const spreadSeconds = num("spread-seconds", args["spread-seconds"], "15", "2");
/** Governed calls per chain in the ramp (fewer in --quick, so that its short steps complete chains). */
const CALLS_PER_CHAIN = quick ? 2 : 20;
const EVALUATE_EVERY = 10;
const RAMP_ORGS = 4;
const APPEND_SAMPLES = quick ? 10 : 200;
const VERIFY_SAMPLES = quick ? 10 : 200;
const EXPORT_PAGE = 1000;
/** Unmeasured load at the first step's rate before the ramp (JIT, pools, caches). */
const WARMUP_SECONDS = quick ? 1 : 20;
/** A step whose decision p99 is beyond this is saturated (the ramp stops), whatever the SLO. */
const SATURATED_P99_MS = 1000;
/** Calls in flight beyond this many seconds of a step's load fail at once (an overload). */
const MAX_BACKLOG_SECONDS = 5;
const ACTIONS = [
  { action_type: "tool_call", action_name: "read_file", payload: { path: "/data/report.csv", limit: 100 } },
  { action_type: "llm_call", action_name: "plan", payload: { model: "m-1", prompt_tokens: 812 } },
  { action_type: "tool_call", action_name: "search", payload: { query: "open invoices", top_k: 5 } },
  // No external domain: a call that waits for a human approval is not the load of this bench.
  { action_type: "tool_call", action_name: "update_ticket", payload: { ticket: "OPS-17", status: "done" } },
];
const us = (ms: number) => Math.max(1, Math.round(ms * 1000));

type Client = ReturnType<typeof benchClient>;

/** A JSON request that must answer 2xx. @throws Error naming the route and status. */
async function call(
  http: Client,
  key: string,
  method: string,
  route: string,
  body?: unknown,
): Promise<Record<string, unknown>> {
  const r = await http.request(
    method,
    route,
    { authorization: `Bearer ${key}` },
    body === undefined ? undefined : JSON.stringify(body),
  );
  if (r.status < 200 || r.status > 299)
    throw new Error(`${method} ${route} → ${r.status}: ${r.body.slice(0, 300)}`);
  return r.body ? JSON.parse(r.body) : {};
}

const openChain = async (http: Client, key: string, name: string) =>
  (await call(http, key, "POST", "/v1/chains", { name })).chain_id as string;

const recordAction = async (http: Client, key: string, chainId: string, i: number, agent: string) =>
  (
    await call(http, key, "POST", `/v1/chains/${chainId}/actions`, {
      agent_name: agent,
      ...ACTIONS[i % ACTIONS.length]!,
    })
  ).event_id as string;

const complete = async (http: Client, key: string, chainId: string) =>
  call(http, key, "POST", `/v1/chains/${chainId}/complete`, {});

/** One ramp step's readings. */
interface Step {
  agents: number;
  rate: number;
  achievedRate: number;
  decision: { p50: number; p99: number; max: number };
  completion: { p50: number; p99: number; count: number };
  calls: number;
  errors: number;
  firstError: string | null;
  cpuPerCallUs: { service: number; postgres: number; loadClient: number };
  loadAverage: number;
  /** Within the SLO and not saturated. */
  met: boolean;
  /** A failed call, an achieved rate below 95% of the intended one, or a decision p99 over SATURATED_P99_MS: the ramp stops. */
  saturated: boolean;
}

/** One chain-length mark's readings. */
interface Mark {
  length: number;
  appendMs: { p50: number; p99: number };
  verifyOneMs: { p50: number; p99: number };
  exportSeconds: number;
  verifyChainSeconds: number;
  loadAverage: number;
}

async function main() {
  progress(
    `capacity: parts ${[...parts].join(",")}; ${args.durable ? "durable" : "fsync-off"} PostgreSQL; ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}${quick ? " (quick)" : ""}`,
  );
  const stops = teardown();
  try {
    const build = buildBundles();
    stops.push(async () => rmSync(build, { recursive: true, force: true }));
    const cluster = await startDatabase(["capacity"], { durable: args.durable! });
    stops.push(() => cluster.stop());
    const svc = await startServiceProcess(
      cluster.urlOf("capacity"),
      { NODE_ENV: "production", NODE_OPTIONS: SERVICE_NODE_OPTIONS },
      [],
      [path.join(build, "service.js")],
    );
    stops.push(() => svc.stop());
    const http = benchClient(svc.url, 2048);
    stops.push(async () => http.close());
    const servicePid = svc.proc.pid!;
    const pgCpu = () => clusterCpuUs(cluster.port);
    const rows: ResultRow[] = [];
    const extra: Record<string, unknown> = {
      quick,
      durable: args.durable,
      cpus: os.cpus().length,
      service_node_options: SERVICE_NODE_OPTIONS,
    };

    if (parts.has("ramp")) {
      const steps = await ramp(svc, http, servicePid, pgCpu);
      extra.steps = steps;
      // The SLO knee: the last step within the SLO before the first one over it.
      const firstOver = steps.findIndex((s) => !s.met);
      const knee = (firstOver === -1 ? steps : steps.slice(0, firstOver)).at(-1);
      const first = steps[firstOver];
      const unsaturated = steps.filter((s) => !s.saturated).at(-1);
      if (knee) {
        rows.push(
          infoRow(
            "capacity",
            `knee: agents at ${agentRate} call/s each within decision p99 ≤ ${sloMs} ms`,
            "agents",
            [knee.agents],
          ),
          infoRow("capacity", "knee: governed calls per second", "calls/s", [knee.achievedRate]),
          infoRow("capacity", "knee: decision p99", "ms", [knee.decision.p99]),
          infoRow("capacity", "knee: service CPU per governed call", "µs", [knee.cpuPerCallUs.service]),
          infoRow("capacity", "knee: PostgreSQL CPU per governed call", "µs", [knee.cpuPerCallUs.postgres]),
        );
      }
      if (first)
        rows.push(
          infoRow("capacity", `first step over the SLO: ${first.agents} agents, decision p99`, "ms", [
            first.decision.p99,
          ]),
        );
      if (unsaturated)
        rows.push(
          infoRow(
            "capacity",
            `throughput knee: last step not saturated, ${unsaturated.agents} agents`,
            "calls/s",
            [unsaturated.achievedRate],
          ),
          infoRow("capacity", "throughput knee: decision p99", "ms", [unsaturated.decision.p99]),
          infoRow("capacity", "throughput knee: service CPU per governed call", "µs", [
            unsaturated.cpuPerCallUs.service,
          ]),
          infoRow("capacity", "throughput knee: PostgreSQL CPU per governed call", "µs", [
            unsaturated.cpuPerCallUs.postgres,
          ]),
        );
    }

    if (parts.has("chain")) {
      const marks = await chainMarks(svc, http);
      extra.marks = marks;
      for (const m of marks) {
        rows.push(
          infoRow("capacity", `receipt append p50 at ${m.length} receipts`, "ms", [m.appendMs.p50]),
          infoRow("capacity", `verify one receipt p50 at ${m.length} receipts`, "ms", [m.verifyOneMs.p50]),
          infoRow("capacity", `export + verify whole chain at ${m.length} receipts, per receipt`, "µs", [
            ((m.exportSeconds + m.verifyChainSeconds) / m.length) * 1e6,
          ]),
        );
      }
      const [short, long] = [marks[0]!, marks.at(-1)!];
      rows.push(
        {
          ...infoRow("capacity", `receipt append p50 at ${long.length} vs ${short.length} receipts`, "ms", [
            long.appendMs.p50,
          ]),
          baseline: `at ${short.length} receipts`,
          baselineValue: short.appendMs.p50,
          ratio: long.appendMs.p50 / short.appendMs.p50,
        },
        {
          ...infoRow(
            "capacity",
            `whole-chain verification per receipt at ${long.length} vs ${short.length}`,
            "µs",
            [((long.exportSeconds + long.verifyChainSeconds) / long.length) * 1e6],
          ),
          baseline: `at ${short.length} receipts`,
          baselineValue: ((short.exportSeconds + short.verifyChainSeconds) / short.length) * 1e6,
          ratio:
            (long.exportSeconds + long.verifyChainSeconds) /
            long.length /
            ((short.exportSeconds + short.verifyChainSeconds) / short.length),
        },
      );
    }

    if (parts.has("spread")) {
      const one = await writeReceipts(svc, http, 1, 1, pgCpu, servicePid);
      const single = await writeReceipts(svc, http, writers, 1, pgCpu, servicePid);
      const spread = await writeReceipts(svc, http, writers, writers, pgCpu, servicePid);
      extra.spread = { one, single, spread };
      rows.push(
        infoRow("capacity", "receipts/s, 1 writer", "receipts/s", [one.perSecond]),
        {
          ...infoRow("capacity", `receipts/s, ${writers} writers in one organization`, "receipts/s", [
            single.perSecond,
          ]),
          better: "higher",
          baseline: `${writers} writers in ${writers} organizations`,
          baselineValue: spread.perSecond,
          ratio: single.perSecond / spread.perSecond,
        },
        infoRow("capacity", `complete p99, ${writers} writers in one organization`, "ms", [
          single.completeP99,
        ]),
        infoRow("capacity", `complete p99, ${writers} writers in ${writers} organizations`, "ms", [
          spread.completeP99,
        ]),
      );
    }
    extra.load_average_1m_at_end = os.loadavg()[0];
    report("capacity", rows, extra);
  } finally {
    await stops.stopAll();
  }
}

/** Part "ramp": doubles the agents per step until a step misses the SLO. */
async function ramp(
  svc: Awaited<ReturnType<typeof startServiceProcess>>,
  http: Client,
  servicePid: number,
  pgCpu: () => number,
): Promise<Step[]> {
  const keys = await Promise.all(Array.from({ length: RAMP_ORGS }, (_, i) => benchOrg(svc, `ramp-${i}`)));
  interface Agent {
    name: string;
    key: string;
    chainId: string;
    calls: number;
    tail: Promise<void>;
  }
  const agents: Agent[] = [];
  const steps: Step[] = [];
  // A warm-up at the first step's load (JIT, pools, caches), then the steps.
  for (const [index, n] of [agentSteps[0]!, ...agentSteps].entries()) {
    const warmUp = index === 0;
    // New agents open their chains off the clock.
    while (agents.length < n) {
      const i = agents.length;
      const key = keys[i % RAMP_ORGS]!;
      agents.push({
        name: `agent-${i}`,
        key,
        chainId: await openChain(http, key, "capacity"),
        calls: 0,
        tail: Promise.resolve(),
      });
    }
    const rate = n * agentRate;
    const decision = latencyHistogram();
    const completion = latencyHistogram();
    let inflight = 0;
    const maxInflight = Math.max(50, rate * MAX_BACKLOG_SECONDS);
    const governed = async (agent: Agent, i: number, intended: number) => {
      if (i % EVALUATE_EVERY === 0)
        await call(http, agent.key, "POST", `/v1/chains/${agent.chainId}/actions/evaluate`, {
          agent_name: agent.name,
          ...ACTIONS[i % ACTIONS.length]!,
        });
      const eventId = await recordAction(http, agent.key, agent.chainId, i, agent.name);
      decision.recordValue(us(performance.now() - intended));
      await call(http, agent.key, "POST", "/v1/outcomes", {
        outcomes: [
          {
            chain_id: agent.chainId,
            event_id: eventId,
            outcome: { status: "success", error_class: null, duration_ms: 12, result_sha256: null },
          },
        ],
      });
      if (++agent.calls >= CALLS_PER_CHAIN) {
        const t = performance.now();
        await complete(http, agent.key, agent.chainId);
        completion.recordValue(us(performance.now() - t));
        agent.chainId = await openChain(http, agent.key, "capacity");
        agent.calls = 0;
      }
    };
    const cpu0 = { service: cpuSeconds(servicePid), postgres: pgCpu(), client: process.cpuUsage() };
    const t0 = performance.now();
    const r = await runAtRate({
      rate,
      count: Math.round(rate * (warmUp ? WARMUP_SECONDS : stepSeconds)),
      call: (i) => {
        const agent = agents[i % n]!;
        const intended = t0 + (i * 1000) / rate;
        if (++inflight > maxInflight) {
          inflight--;
          return Promise.reject(new Error(`more than ${MAX_BACKLOG_SECONDS} s of load in flight`));
        }
        const run = agent.tail.then(() => governed(agent, i, intended)).finally(() => inflight--);
        agent.tail = run.catch(() => undefined);
        return run;
      },
    });
    const calls = r.latency.totalCount + r.errors;
    const client = process.cpuUsage(cpu0.client);
    const cpuPerCallUs = {
      service: ((cpuSeconds(servicePid) - cpu0.service) * 1e6) / calls,
      postgres: (pgCpu() - cpu0.postgres) / calls,
      loadClient: (client.user + client.system) / calls,
    };
    const d = percentilesMs(decision);
    const c = percentilesMs(completion);
    await Promise.all(agents.map((a) => a.tail));
    if (warmUp) {
      progress(`  ramp warm-up: ${n} agents for ${WARMUP_SECONDS} s, ${r.errors} errors`);
      continue;
    }
    const saturated = r.errors > 0 || r.achievedRate < 0.95 * rate || d.p99 > SATURATED_P99_MS;
    const met = !saturated && d.p99 <= sloMs;
    const step: Step = {
      agents: n,
      rate,
      achievedRate: r.achievedRate,
      decision: { p50: d.p50, p99: d.p99, max: d.max },
      completion: { p50: c.p50, p99: c.p99, count: c.count },
      calls,
      errors: r.errors,
      firstError: r.errors > 0 ? String((r.firstError as Error)?.message ?? r.firstError) : null,
      cpuPerCallUs,
      loadAverage: os.loadavg()[0]!,
      met,
      saturated,
    };
    steps.push(step);
    progress(
      `  ramp ${n} agents, ${rate} calls/s: achieved ${r.achievedRate.toFixed(1)}/s, decision p50 ${d.p50.toFixed(1)} ms p99 ${d.p99.toFixed(1)} ms, complete p99 ${c.p99.toFixed(1)} ms, ${r.errors} errors${step.firstError ? ` (${step.firstError})` : ""}, CPU per call service ${cpuPerCallUs.service.toFixed(0)} µs PostgreSQL ${cpuPerCallUs.postgres.toFixed(0)} µs client ${cpuPerCallUs.loadClient.toFixed(0)} µs; load average ${step.loadAverage.toFixed(1)}${saturated ? " — saturated" : met ? "" : " — over the SLO"}`,
    );
    if (saturated) break;
  }
  return steps;
}

/** Part "chain": one organization's receipt log at each length mark. */
async function chainMarks(
  svc: Awaited<ReturnType<typeof startServiceProcess>>,
  http: Client,
): Promise<Mark[]> {
  const key = await benchOrg(svc, "chain");
  // Verification and export take a member session or an admin key.
  const adminKey = (
    await api(`${svc.url}/v1/admin/organizations/chain/api-keys`, svc.adminToken, "POST", {
      name: "bench-verify",
      role: "admin",
    })
  ).api_key as string;
  let length = 0;
  const marks: Mark[] = [];
  for (const mark of lengths) {
    // Grow to the mark: `writers` writers completing empty chains.
    const t = performance.now();
    const start = length;
    let claimed = length;
    await Promise.all(
      Array.from({ length: writers }, async () => {
        while (claimed < mark - APPEND_SAMPLES) {
          claimed++;
          await complete(http, key, await openChain(http, key, "filler"));
          length++;
        }
      }),
    );
    progress(
      `  chain grown to ${length} receipts at ${((length - start) / ((performance.now() - t) / 1000)).toFixed(0)} receipts/s (${writers} writers)`,
    );
    const append = latencyHistogram();
    let newest = "";
    for (let i = 0; i < APPEND_SAMPLES; i++) {
      const chainId = await openChain(http, key, "measured");
      await recordAction(http, key, chainId, i, "agent");
      const t1 = performance.now();
      newest = (await complete(http, key, chainId)).receipt_id as string;
      append.recordValue(us(performance.now() - t1));
      length++;
    }
    const verifyOne = latencyHistogram();
    for (let i = 0; i < VERIFY_SAMPLES; i++) {
      const t1 = performance.now();
      const v = await call(http, adminKey, "GET", `/v1/verification/v2/receipts/${newest}`);
      verifyOne.recordValue(us(performance.now() - t1));
      if (v.overall_status !== "valid") throw new Error(`receipt ${newest} verifies as ${v.overall_status}`);
    }
    let exportMs = 0;
    let verifyMs = 0;
    for (let from = 1; from <= length; from += EXPORT_PAGE) {
      const t1 = performance.now();
      const doc = await call(
        http,
        adminKey,
        "GET",
        `/v1/receipts/export?from_sequence=${from}&to_sequence=${Math.min(length, from + EXPORT_PAGE - 1)}`,
      );
      const t2 = performance.now();
      const result = verifyExport(doc, importJwks(doc.jwks), KeysSource.export);
      verifyMs += performance.now() - t2;
      exportMs += t2 - t1;
      if (result.overall_status !== "valid")
        throw new Error(
          `export from ${from} verifies as ${result.overall_status}: ${JSON.stringify(result).slice(0, 500)}`,
        );
    }
    const a = percentilesMs(append);
    const v = percentilesMs(verifyOne);
    const m: Mark = {
      length,
      appendMs: { p50: a.p50, p99: a.p99 },
      verifyOneMs: { p50: v.p50, p99: v.p99 },
      exportSeconds: exportMs / 1000,
      verifyChainSeconds: verifyMs / 1000,
      loadAverage: os.loadavg()[0]!,
    };
    marks.push(m);
    progress(
      `  chain at ${length} receipts: append p50 ${a.p50.toFixed(2)} ms p99 ${a.p99.toFixed(2)} ms; verify one p50 ${v.p50.toFixed(2)} ms; whole chain: export ${m.exportSeconds.toFixed(2)} s + verify offline ${m.verifyChainSeconds.toFixed(2)} s; load average ${m.loadAverage.toFixed(1)}`,
    );
  }
  return marks;
}

/** Part "spread": `n` closed-loop receipt writers over `orgs` organizations for --spread-seconds. */
async function writeReceipts(
  svc: Awaited<ReturnType<typeof startServiceProcess>>,
  http: Client,
  n: number,
  orgs: number,
  pgCpu: () => number,
  servicePid: number,
) {
  const tag = `spread-${n}-${orgs}`;
  const keys = await Promise.all(Array.from({ length: orgs }, (_, i) => benchOrg(svc, `${tag}-${i}`)));
  const completeLatency = latencyHistogram();
  let receipts = 0;
  const cpu0 = { service: cpuSeconds(servicePid), postgres: pgCpu() };
  const t0 = performance.now();
  const end = t0 + spreadSeconds * 1000;
  await Promise.all(
    Array.from({ length: n }, async (_, w) => {
      const key = keys[w % orgs]!;
      for (let i = 0; performance.now() < end; i++) {
        const chainId = await openChain(http, key, tag);
        await recordAction(http, key, chainId, i, `writer-${w}`);
        const t = performance.now();
        await complete(http, key, chainId);
        completeLatency.recordValue(us(performance.now() - t));
        receipts++;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const result = {
    writers: n,
    orgs,
    receipts,
    perSecond: receipts / seconds,
    completeP50: percentilesMs(completeLatency).p50,
    completeP99: percentilesMs(completeLatency).p99,
    cpuPerReceiptUs: {
      service: ((cpuSeconds(servicePid) - cpu0.service) * 1e6) / receipts,
      postgres: (pgCpu() - cpu0.postgres) / receipts,
    },
    loadAverage: os.loadavg()[0]!,
  };
  progress(
    `  spread: ${n} writers over ${orgs} organizations: ${result.perSecond.toFixed(0)} receipts/s, complete p50 ${result.completeP50.toFixed(2)} ms p99 ${result.completeP99.toFixed(2)} ms; CPU per receipt (with its chain and action) service ${result.cpuPerReceiptUs.service.toFixed(0)} µs PostgreSQL ${result.cpuPerReceiptUs.postgres.toFixed(0)} µs; load average ${result.loadAverage.toFixed(1)}`,
  );
  return result;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
