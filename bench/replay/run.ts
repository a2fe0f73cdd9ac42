/**
 * bench/replay: events replayed per second by POST /v1/admin/organizations/{slug}/policies/replay
 * (issue 28, "Replay before enforce") on real PostgreSQL, the service as its own process. Events
 * are recorded through POST /v1/chains/{id}/actions (`--recorded`, default 20,000 over 40-event
 * chains); to reach `--events` (default 100,000) the recorded chains and their events are then
 * copied in SQL (new chain and event ids, every other column as the route wrote it: the same
 * rows, more of them). The candidate combines three CEL rules (one reading `chain.actions`) and
 * lower financial thresholds with the organization's policy. The service runs as its image does:
 * the production bundle (`npm run build`, afresh into a scratch directory), NODE_ENV=production. Figure: events_replayed /
 * duration_ms as the service reports it, the median of `--repeats` replays, and the client's
 * wall time beside it. Target ≥ 50,000 events/s (issue 28), reported, not asserted. Beside it,
 * per replay: the service's CPU time (/proc, all its threads), as events per CPU-second of the
 * service, the machine's idle share and load average — on a shared machine the wall rate follows
 * the CPU the replay got — and the service's largest event-loop delay during the replay (how long
 * a governed call arriving meanwhile could wait for the thread that serves requests).
 *
 * The baseline, measured by turns with the replays: the same pages read alone
 * (src/service/replay/store.ts replayPage: its query, each page one JSON string, received page
 * after page in one READ ONLY transaction, from this process, not decoded), as events per
 * second — the rate a replay cannot pass while it reads its pages one after another, however
 * many threads decide them. The bench
 * fails if two replays of a candidate answer differently (duration_ms aside).
 *
 * `--profile` runs the service with --cpu-prof into bench/results/profiles/replay/.
 *
 *   npx tsx bench/replay/run.ts [--recorded 20000] [--events 100000] [--repeats 3] [--quick] [--profile]
 */
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { CHAIN_PAGE } from "../../src/service/replay/replay-policy.js";
import { beginReplayReads, replayPage } from "../../src/service/replay/store.js";
import { api, benchOrg, buildBundles, startDatabase, startServiceProcess } from "../lib/parts.js";
import { cpuSeconds, machineIdle } from "../lib/proc.js";
import { progress, report } from "../lib/report.js";
import { infoRow, median, type ResultRow, spreadPct } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    recorded: { type: "string", default: "20000" },
    events: { type: "string", default: "100000" },
    repeats: { type: "string", default: "3" },
    quick: { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const recorded = quick ? 2000 : Number(args.recorded);
const total = quick ? 4000 : Number(args.events);
const repeats = quick ? 1 : Number(args.repeats);
const PER_CHAIN = 40;
const CLIENTS = 16;
const TARGET = 50_000;
const nodeArgs = args.profile ? ["--cpu-prof", "--cpu-prof-dir=bench/results/profiles/replay"] : [];

const BASE = {
  financial_approval_threshold_usd: 100_000,
  cumulative_financial_threshold_usd: 10_000_000,
  first_external_communication_requires_approval: false,
  pii_to_external_requires_approval: false,
};
const CANDIDATE = {
  ...BASE,
  cumulative_financial_threshold_usd: 5000,
  custom_rules: [
    {
      name: "high-level",
      match: { action_name: "lookup" },
      expression: "action.payload.level > 6.0",
      outcome: "deny",
    },
    {
      name: "mail-after-read",
      expression: 'action.name == "send_email" && chain.actions.exists(a, a.name == "read_customer")',
      outcome: "require_approval",
    },
    {
      name: "prod",
      expression: 'org.environment == "production" && action.agentName == "agent-9"',
      outcome: "deny",
    },
  ],
};

function actionOf(c: number, i: number) {
  const r = (c * 7919 + i * 104_729) % 1000;
  const kind = r % 4;
  if (kind === 0)
    return {
      agent_name: "agent-1",
      action_type: "financial",
      action_name: "pay",
      payload: { amount_usd: r },
    };
  if (kind === 1)
    return {
      agent_name: "agent-2",
      action_type: "tool_call",
      action_name: "read_customer",
      payload: { id: r },
    };
  if (kind === 2)
    return {
      agent_name: "mailer",
      action_type: "tool_call",
      action_name: "send_email",
      payload: { to: "a@b.example" },
    };
  return {
    agent_name: "agent-3",
    action_type: "tool_call",
    action_name: "lookup",
    payload: { level: r % 10, q: `q${r}` },
  };
}

/**
 * Reads every page of the replay of [from, to) as replayPolicy reads them, without deciding:
 * events read per second (see the module comment).
 */
async function readAlone(db: pg.Client, orgId: string, from: Date, to: Date): Promise<number> {
  const q = { query: (text: never, values?: unknown[]) => db.query(text, values) as never };
  await db.query("BEGIN");
  await beginReplayReads(q);
  const t0 = performance.now();
  let events = 0;
  for (let afterId = "00000000-0000-0000-0000-000000000000"; ; ) {
    const page = await replayPage(q, { orgId, from, to, afterId, chains: CHAIN_PAGE, limit: 200_001 });
    if (page.events === 0) break;
    events += page.events;
    afterId = page.lastChainId!;
  }
  const secs = (performance.now() - t0) / 1000;
  await db.query("COMMIT");
  return events / secs;
}

/**
 * The service's largest event-loop delay since the last call, in ms (prom-client's
 * nodejs_eventloop_lag_max_seconds, whose histogram restarts at each scrape): how long a request
 * arriving meanwhile — a governed call — could wait for the thread that serves requests.
 */
async function eventLoopMaxMs(serviceUrl: string): Promise<number> {
  const text = await (await fetch(`${serviceUrl}/metrics`)).text();
  const m = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
  if (!m) throw new Error("the service's /metrics has no nodejs_eventloop_lag_max_seconds");
  return Number(m[1]) * 1000;
}

/** A figure without target, events/s (higher is better), rounded. */
const higherInfo = (figure: string, values: number[]): ResultRow => ({
  ...infoRow("replay", figure, "events/s", values),
  value: Math.round(median(values)),
  better: "higher",
});

async function main() {
  progress(`replay: ${recorded} events recorded through the route, ${total} in all, ${repeats} repeats`);
  const cluster = await startDatabase(["tollgate"]);
  // The service as its image runs it: the production bundle, NODE_ENV=production.
  const build = buildBundles();
  const svc = await startServiceProcess(cluster.urlOf("tollgate"), { NODE_ENV: "production" }, nodeArgs, [
    path.join(build, "service.js"),
  ]);
  const db = new pg.Client({ connectionString: cluster.urlOf("tollgate") });
  try {
    const key = await benchOrg(svc, "bench");
    await api(`${svc.url}/v1/admin/organizations/bench/policies/base`, svc.adminToken, "PUT", {
      config: BASE,
    });
    const from = new Date(Date.now() - 60_000).toISOString();

    // Record through the route: CLIENTS chains at a time, each its PER_CHAIN events in order.
    const chains = Math.ceil(recorded / PER_CHAIN);
    const started = performance.now();
    for (let c0 = 0; c0 < chains; c0 += CLIENTS) {
      await Promise.all(
        Array.from({ length: Math.min(CLIENTS, chains - c0) }, async (_, j) => {
          const c = c0 + j;
          const chain = await api(`${svc.url}/v1/chains`, key, "POST", { name: `bench-${c}` });
          for (let i = 0; i < PER_CHAIN; i++) {
            await api(`${svc.url}/v1/chains/${chain.chain_id}/actions`, key, "POST", actionOf(c, i));
          }
        }),
      );
    }
    const recordSecs = (performance.now() - started) / 1000;
    progress(`recorded ${chains * PER_CHAIN} events through the route in ${recordSecs.toFixed(1)} s`);

    // Copies of the recorded chains and events (new ids, the rows otherwise as the route wrote them).
    await db.connect();
    const copies = Math.max(0, Math.ceil(total / (chains * PER_CHAIN)) - 1);
    for (let k = 1; k <= copies; k++) {
      await db.query("BEGIN");
      await db.query(
        `CREATE TEMP TABLE m ON COMMIT DROP AS SELECT id AS old, gen_random_uuid() AS new FROM chains WHERE name LIKE 'bench-%' AND name NOT LIKE '%#%'`,
      );
      await db.query(
        `INSERT INTO chains (id, org_id, name, metadata, policy_config, environment, status, started_at, event_count,
           total_tokens, financial_exposure_usd, external_comm_agents, external_communications_count,
           records_modified_count, domains_contacted, estimated_cost_usd, created_by, principal)
         SELECT m.new, c.org_id, c.name || '#${k}', c.metadata, c.policy_config, c.environment, c.status, c.started_at,
           c.event_count, c.total_tokens, c.financial_exposure_usd, c.external_comm_agents,
           c.external_communications_count, c.records_modified_count, c.domains_contacted, c.estimated_cost_usd,
           c.created_by, c.principal
         FROM chains c JOIN m ON m.old = c.id`,
      );
      await db.query(
        `INSERT INTO chain_events (id, chain_id, org_id, sequence, agent_name, parent_agent_name, action_type, action_name,
           payload, category, facts, decision, triggers, exception_id, approval_id, recorded_at, outcome, principal,
           org_environment)
         SELECT gen_random_uuid(), m.new, e.org_id, e.sequence, e.agent_name, e.parent_agent_name, e.action_type,
           e.action_name, e.payload, e.category, e.facts, e.decision, e.triggers, e.exception_id, e.approval_id,
           e.recorded_at, e.outcome, e.principal, e.org_environment
         FROM chain_events e JOIN m ON m.old = e.chain_id`,
      );
      await db.query("COMMIT");
    }
    await db.query("ANALYZE");
    const { rows } = await db.query("SELECT count(*)::int AS n FROM chain_events");
    progress(`${rows[0].n} events in the database (${copies} copies)`);

    const to = new Date(Date.now() + 60_000).toISOString();
    const orgId = (await db.query("SELECT id FROM organizations WHERE slug = 'bench'")).rows[0].id as string;
    const rowsOut: ResultRow[] = [];
    const lasts: Record<string, unknown> = {};
    for (const [label, candidate] of [
      ["CEL + thresholds candidate", CANDIDATE],
      ["thresholds-only candidate", { ...BASE, cumulative_financial_threshold_usd: 5000 }],
    ] as const) {
      const body = { candidate, replace: "base", from, to, max_events: 200_000, sample_size: 20 };
      const replay = () =>
        api(`${svc.url}/v1/admin/organizations/bench/policies/replay`, svc.adminToken, "POST", body);
      const service: number[] = [];
      const wall: number[] = [];
      const perCpu: number[] = [];
      const floor: number[] = [];
      const loopDelay: number[] = [];
      const answers = new Set<string>();
      // One warm-up replay (JIT, plans), then replays and floor reads by turns.
      await replay();
      for (let r = 0; r < repeats; r++) {
        const cpu0 = cpuSeconds(svc.proc.pid!);
        const idle = machineIdle();
        const load = readFileSync("/proc/loadavg", "utf8").split(" ")[0];
        await eventLoopMaxMs(svc.url);
        const t0 = performance.now();
        const answer = await replay();
        const ms = performance.now() - t0;
        loopDelay.push(await eventLoopMaxMs(svc.url));
        const idleShare = idle();
        const svcCpu = cpuSeconds(svc.proc.pid!) - cpu0;
        perCpu.push(answer.events_replayed / svcCpu);
        service.push(answer.events_replayed / (answer.duration_ms / 1000));
        wall.push(answer.events_replayed / (ms / 1000));
        answers.add(JSON.stringify({ ...answer, duration_ms: 0 }));
        lasts[label] = { ...answer, sample: answer.sample.length };
        floor.push(await readAlone(db, orgId, new Date(from), new Date(to)));
        progress(
          `${label}, run ${r + 1}: ${answer.events_replayed} events replayed in ${answer.duration_ms} ms (${Math.round(service.at(-1)!)} events/s; service CPU ${svcCpu.toFixed(2)} s, machine idle ${(idleShare * 100).toFixed(0)}%, load average ${load}; changed ${answer.changed}: ${JSON.stringify(answer.changes)}; event-loop delay max ${loopDelay.at(-1)!.toFixed(0)} ms); the same pages read alone ${Math.round(floor.at(-1)!)} events/s`,
        );
      }
      if (answers.size !== 1) throw new Error(`${label}: the replays answered differently`);
      const value = median(service);
      rowsOut.push(
        {
          benchmark: "replay",
          figure: `events replayed per second (${(lasts[label] as { events_replayed: number }).events_replayed} events, ${label})`,
          value: Math.round(value),
          unit: "events/s",
          baseline: "the same pages read alone (no deciding), by turns",
          baselineValue: Math.round(median(floor)),
          ratio: value / median(floor),
          better: "higher",
          target: `≥ ${TARGET} events/s`,
          met: value >= TARGET,
          spreadPct: spreadPct(service),
          repeats,
        },
        higherInfo(`events replayed per CPU-second of the service (${label})`, perCpu),
        higherInfo(`events replayed per second, client wall time (${label}, HTTP round trip included)`, wall),
        infoRow(
          "replay",
          `the service's event-loop delay, max during the replay (${label})`,
          "ms",
          loopDelay,
        ),
      );
    }
    report("replay", rowsOut, {
      last: lasts,
      record_seconds: recordSecs,
      recorded_through_route: chains * PER_CHAIN,
    });
  } finally {
    await db.end().catch(() => {});
    await svc.stop();
    await cluster.stop();
    rmSync(build, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
