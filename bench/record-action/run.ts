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
 * CPU rows say where the ratio goes: CPU time per recorded action of the service, PostgreSQL
 * and the load client (from /proc, over the service's run), beside the CPU per pgbench
 * transaction of PostgreSQL and pgbench, and the machine's idle share in each run.
 *
 * Two PostgreSQL configurations, each its own cluster, service and floors, run one after the
 * other (--durability):
 * - `durable`: PostgreSQL's defaults (fsync, synchronous_commit, full_page_writes on), as a
 *   production server runs. Every commit waits for a WAL flush, so pgbench's TPS is bound by the
 *   disk, and the p99 of both by the disk's stalls: a probe (bench/lib/disk.ts) times 8 kB
 *   write + fdatasync in the data directory, alone, before the runs, and during every run a
 *   watcher (bench/lib/wal-watch.ts) records how long the WAL flush stood still — beyond 25 ms
 *   for over 1% of a run, no durable committer can meet the p99 target in it.
 * - `no-fsync`: the test suite's settings (all three off): commits cost CPU only, so the ratio
 *   compares CPU per action with CPU per pgbench transaction.
 * The p99 rows give pgbench's p99 beside ours, corrected for coordinated omission as wrk
 * corrects its own (bench/lib/pgbench.ts).
 *
 * The load: --chains-per-client chains per client (default 4), taken round-robin by wrk's one
 * thread, so that a chain rarely has two actions in flight (a chain's actions are serialized;
 * when two meet, the guarded write retries the second, as it would for an agent).
 *
 *   npx tsx bench/record-action/run.ts [--clients 16,32] [--seconds 10] [--repeats 3]
 *     [--durability durable,no-fsync] [--quick] [--help]
 */
import { rmSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import type { PostgresCluster } from "../../test/support/postgres.js";
import { fdatasyncLatency, type SyncLatency } from "../lib/disk.js";
import {
  api,
  benchOrg,
  buildBundles,
  startDatabase,
  startScript,
  startServiceProcess,
  type Teardown,
  teardown,
} from "../lib/parts.js";
import { type PgbenchLatency, pgbenchInsertLatency } from "../lib/pgbench.js";
import { cpuSeconds, machineIdle, postgresCpuUs, waitedChildrenCpuUs } from "../lib/proc.js";
import { progress, report } from "../lib/report.js";
import { infoRow, median, type ResultRow, spreadPct } from "../lib/stats.js";
import { type WalStalls, watchWalFlush } from "../lib/wal-watch.js";
import { requireWrk, runWrk, type WrkPost, type WrkResult } from "../lib/wrk.js";

const { values: args } = parseArgs({
  options: {
    clients: { type: "string", default: "16,32" },
    seconds: { type: "string", default: "10" },
    repeats: { type: "string", default: "3" },
    "chains-per-client": { type: "string", default: "4" },
    durability: { type: "string", default: "durable,no-fsync" },
    quick: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  console.log(
    "usage: npx tsx bench/record-action/run.ts [--clients 16,32] [--seconds 10] [--repeats 3]\n" +
      "         [--chains-per-client 4] [--durability durable,no-fsync] [--quick]\n" +
      "Recorded actions/s and p99 of the service against pgbench's insert TPS on the same PostgreSQL,\n" +
      "for each PostgreSQL configuration (durable: PostgreSQL's defaults; no-fsync: the tests' settings).\n" +
      "--quick: 4 clients, 1 s, 1 repeat. Results: bench/results/record-action.{json,md}.",
  );
  process.exit(0);
}
const quick = args.quick!;
const clientCounts = (quick ? "4" : args.clients!).split(",").map(Number);
const seconds = quick ? 1 : Number(args.seconds);
const repeats = quick ? 1 : Number(args.repeats);
const chainsPerClient = Number(args["chains-per-client"]);
/** The PostgreSQL configurations measured, by name: whether commits are durable. */
const configurations = { durable: "durable PostgreSQL", "no-fsync": "PostgreSQL without fsync" } as const;
type Durability = keyof typeof configurations;
const durabilities = args.durability!.split(",") as Durability[];
for (const d of durabilities) {
  if (!(d in configurations)) {
    console.error(`--durability: unknown configuration ${JSON.stringify(d)} (durable, no-fsync)`);
    process.exit(2);
  }
}
const targets: Record<number, number> = { 16: 0.5, 32: 0.4 };
const P99_TARGET_MS = 25;

const action = JSON.stringify({
  agent_name: "bench",
  action_type: "tool_call",
  action_name: "read_file",
  payload: { path: "/data/x.txt" },
});

/** CPU time per request (µs) of the server, PostgreSQL and the load client during one run. */
interface CpuPerRequest {
  server: number;
  postgres: number;
  client: number;
  /** The machine's idle share during the run (0–1). */
  idle: number;
}

/** One repeat at one client count. */
interface Run {
  pgbench: PgbenchLatency;
  /** pgbench's run: `server` is 0 (pgbench talks to PostgreSQL directly). */
  pgbenchCpu: CpuPerRequest;
  service: WrkResult;
  serviceCpu: CpuPerRequest;
  minimal: WrkResult;
  groupCommit: WrkResult;
  /** Durable PostgreSQL only: how long its WAL flush stood still during each run. */
  wal: { pgbench: WalStalls; service: WalStalls } | null;
}

/**
 * Runs `run` and divides the CPU time each party used meanwhile by the requests it served: the
 * server process (all threads), every PostgreSQL process, and this process's waited-for
 * children (wrk or pgbench, run synchronously). The ratio's ceiling on two shared cores is the
 * CPU a pgbench transaction costs over the CPU a recorded action costs. With `walOf`, the WAL
 * flush of that (durable) cluster is watched around the run (`wal`, else null).
 */
async function metered<T>(
  serverPid: number | null,
  run: () => T,
  requestsOf: (r: T) => number,
  walOf: PostgresCluster | null,
) {
  const watch = walOf ? await watchWalFlush(walOf, P99_TARGET_MS) : null;
  const server = () => (serverPid === null ? 0 : cpuSeconds(serverPid) * 1e6);
  const [s0, p0, c0, idle] = [server(), postgresCpuUs(), waitedChildrenCpuUs(), machineIdle()];
  const result = run();
  const n = Math.max(1, requestsOf(result));
  const cpu: CpuPerRequest = {
    server: (server() - s0) / n,
    postgres: (postgresCpuUs() - p0) / n,
    client: (waitedChildrenCpuUs() - c0) / n,
    idle: idle(),
  };
  return { result, cpu, wal: (await watch?.stop()) ?? null };
}

const walText = (w: WalStalls) =>
  `longest ${w.longestMs.toFixed(0)} ms, beyond ${w.thresholdMs} ms ${(w.shareBeyond * 100).toFixed(2)}% of the run`;

const cpuText = (c: CpuPerRequest, server: string) =>
  `${server ? `${server} ${c.server.toFixed(0)} + ` : ""}PostgreSQL ${c.postgres.toFixed(0)} + client ${c.client.toFixed(0)} µs CPU/request, idle ${(c.idle * 100).toFixed(0)}%`;

async function main() {
  requireWrk();
  progress(
    `record-action: clients ${clientCounts.join(",")}, ${seconds}s per run, ${repeats} repeats, PostgreSQL ${durabilities.join(" then ")} (load client: wrk)`,
  );
  const stops = teardown();
  const build = buildBundles();
  stops.push(async () => rmSync(build, { recursive: true, force: true }));
  const rows: ResultRow[] = [];
  try {
    for (const durability of durabilities) rows.push(...(await measure(durability, build, stops)));
  } finally {
    await stops.stopAll();
  }
  report("record-action", rows);
}

/** All runs on one PostgreSQL configuration: its own cluster, service and floors. */
async function measure(durability: Durability, build: string, parent: Teardown): Promise<ResultRow[]> {
  const label = configurations[durability];
  const stops = teardown(parent);
  const durable = durability === "durable";
  const cluster = await startDatabase(["tollgate", "pgbench", "minimal"], { durable });
  stops.push(() => cluster.stop());
  // Durable runs have their WAL flush watched (see metered).
  const walOf = durable ? cluster : null;
  const svc = await startServiceProcess(cluster.urlOf("tollgate"), {}, [], [path.join(build, "service.js")]);
  stops.push(() => svc.stop());
  const floorEnv = { DATABASE_URL: cluster.urlOf("minimal") };
  const minimal = await startScript("bench/record-action/minimal.ts", [], floorEnv);
  stops.push(minimal.stop);
  const groupCommit = await startScript("bench/record-action/minimal.ts", ["--group-commit"], floorEnv);
  stops.push(groupCommit.stop);
  const rows: ResultRow[] = [];
  try {
    if (durable) {
      const disk = fdatasyncLatency(cluster.socketDir, seconds);
      progress(
        `  ${label}: disk, 8 kB write + fdatasync: p50 ${disk.p50.toFixed(2)} ms, p99 ${disk.p99.toFixed(2)} ms, max ${disk.max.toFixed(0)} ms (${disk.count})`,
      );
      rows.push(...diskRows(label, disk));
    }
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
        const {
          result: base,
          cpu: pgbenchCpu,
          wal: pgbenchWal,
        } = await metered(
          null,
          () => pgbenchInsertLatency(cluster, "pgbench", seconds, clients),
          (b) => b.count,
          walOf,
        );
        const {
          result: service,
          cpu: serviceCpu,
          wal: serviceWal,
        } = await metered(
          svc.proc.pid!,
          () => runWrk(svc.url, load, clients, seconds),
          (w) => w.requests,
          walOf,
        );
        const min = runWrk(minimal.address, floorLoad, clients, seconds);
        const gc = runWrk(groupCommit.address, floorLoad, clients, seconds);
        const wal = pgbenchWal && serviceWal ? { pgbench: pgbenchWal, service: serviceWal } : null;
        runs.push({ pgbench: base, pgbenchCpu, service, serviceCpu, minimal: min, groupCommit: gc, wal });
        const r = (w: WrkResult) => `${w.perSecond.toFixed(0)}/s (${(w.perSecond / base.tps).toFixed(3)})`;
        progress(
          `  ${label}, ${clients} clients, run ${i + 1}: pgbench ${base.tps.toFixed(0)} tps, p99 ${base.p99.toFixed(2)} ms (corrected ${base.p99Corrected.toFixed(2)}), max ${base.max.toFixed(0)} ms; service ${r(service)}, p50 ${service.p50.toFixed(2)} ms, p99 ${service.p99.toFixed(2)} ms, errors ${service.errors}; floors: one INSERT per request ${r(min)}, group commit ${r(gc)}`,
        );
        progress(
          `    CPU: pgbench run ${cpuText(pgbenchCpu, "")}; service run ${cpuText(serviceCpu, "service")}`,
        );
        if (wal)
          progress(
            `    WAL flush stood still: pgbench run ${walText(wal.pgbench)}; service run ${walText(wal.service)}`,
          );
      }
      const failed = runs.flatMap((r) => [r.service, r.minimal, r.groupCommit]).filter((w) => w.errors > 0);
      if (failed.length) throw new Error(`record-action: failed requests in ${failed.length} runs`);
      rows.push(...clientRows(`${clients} clients, ${label}`, clients, runs));
    }
  } finally {
    await stops.stopAll();
  }
  return rows;
}

/** The disk probe's rows: p99 and max of 8 kB write + fdatasync, in ms. */
function diskRows(label: string, disk: SyncLatency): ResultRow[] {
  const figure = (p: string) => `disk under ${label}: 8 kB write + fdatasync, ${p}`;
  return [
    infoRow("record-action", figure("p99"), "ms", [disk.p99]),
    infoRow("record-action", figure("max"), "ms", [disk.max]),
  ];
}

/** The result rows of one client count on one configuration (`at`: "32 clients, …"). */
function clientRows(at: string, clients: number, runs: Run[]): ResultRow[] {
  const tps = median(runs.map((r) => r.pgbench.tps));
  const ratioRow = (figure: string, of: (r: Run) => WrkResult, target: number | null): ResultRow => {
    const ratios = runs.map((r) => of(r).perSecond / r.pgbench.tps);
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
  const pgbenchP99 = median(runs.map((r) => r.pgbench.p99Corrected));
  return [
    ratioRow(`actions/s at ${at}`, (r) => r.service, targets[clients] ?? 0.4),
    {
      benchmark: "record-action",
      figure: `p99 at ${at}`,
      value: median(p99s),
      unit: "ms",
      baseline: "pgbench p99, corrected as wrk corrects",
      baselineValue: pgbenchP99,
      ratio: pgbenchP99 / median(p99s),
      better: "lower",
      target: `≤ ${P99_TARGET_MS} ms`,
      met: median(p99s) <= P99_TARGET_MS,
      spreadPct: spreadPct(p99s),
      repeats: runs.length,
    },
    ratioRow(`floor: bare Fastify + one INSERT per request, ${at}`, (r) => r.minimal, null),
    ratioRow(`floor: bare Fastify + group commit, ${at}`, (r) => r.groupCommit, null),
    ...cpuRows(at, runs),
    ...walRows(at, runs),
  ];
}

/**
 * Durable PostgreSQL: how long its WAL flush stood still during the service's runs, beside
 * pgbench's runs (bench/lib/wal-watch.ts). Beyond 25 ms for over 1% of a run, no durable
 * committer's p99 (corrected as wrk corrects) can meet the 25 ms target in that run; a third
 * row, when some runs stayed under that, gives their p99 (`repeats` says how many).
 */
function walRows(at: string, runs: Run[]): ResultRow[] {
  const watched = runs.flatMap((r) => (r.wal ? [r.wal] : []));
  if (!watched.length) return [];
  const row = (figure: string, unit: string, of: (w: WalStalls) => number): ResultRow => {
    const values = watched.map((w) => of(w.service));
    return {
      ...infoRow(
        "record-action",
        `WAL flush stood still during the service's runs at ${at}: ${figure}`,
        unit,
        values,
      ),
      baseline: "during pgbench's runs",
      baselineValue: median(watched.map((w) => of(w.pgbench))),
    };
  };
  const rows = [
    row("longest", "ms", (w) => w.longestMs),
    row(`time beyond ${P99_TARGET_MS} ms`, "% of run", (w) => w.shareBeyond * 100),
  ];
  // The p99 of the runs in which the disk left the target reachable, if any.
  const clear = (w: WalStalls) => w.shareBeyond < 0.01;
  const ours = runs.filter((r) => r.wal && clear(r.wal.service)).map((r) => r.service.p99);
  if (ours.length) {
    const theirs = runs.filter((r) => r.wal && clear(r.wal.pgbench)).map((r) => r.pgbench.p99Corrected);
    const p99 = median(ours);
    rows.push({
      ...infoRow(
        "record-action",
        `p99 at ${at}, runs whose WAL flush stood still beyond ${P99_TARGET_MS} ms < 1% of the time`,
        "ms",
        ours,
      ),
      baseline: `pgbench p99 (corrected), its runs with the same condition${theirs.length ? "" : ": none"}`,
      baselineValue: theirs.length ? median(theirs) : null,
      target: `≤ ${P99_TARGET_MS} ms`,
      met: p99 <= P99_TARGET_MS,
    });
  }
  return rows;
}

/**
 * Where the CPU goes, per recorded action, beside a pgbench transaction (both include the load
 * client): the total row's ratio (pgbench's CPU per transaction over ours per action) is what the
 * throughput ratio would be if both kept the two cores equally busy.
 */
function cpuRows(at: string, runs: Run[]): ResultRow[] {
  const total = (c: CpuPerRequest) => c.server + c.postgres + c.client;
  const row = (figure: string, of: (c: CpuPerRequest) => number, baseline: boolean): ResultRow => {
    const info = infoRow(
      "record-action",
      `CPU per action at ${at}: ${figure}`,
      "µs",
      runs.map((r) => of(r.serviceCpu)),
    );
    if (!baseline) return info;
    const base = median(runs.map((r) => of(r.pgbenchCpu)));
    return { ...info, baseline: "per pgbench transaction", baselineValue: base, ratio: base / info.value };
  };
  return [
    row("all processes", total, true),
    row("service", (c) => c.server, false),
    row("PostgreSQL", (c) => c.postgres, true),
    row("load client", (c) => c.client, true),
  ];
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
