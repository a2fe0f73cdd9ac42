/**
 * bench/grpc-passthrough: throughput of the sidecar's own gRPC plumbing beside a bare
 * @grpc/grpc-js server answering the same exchange, measured in the same run.
 *
 * "Sidecar echo" here is the sidecar's full request path with no governance-service round
 * trip in it, since every ToolGateway method that succeeds needs the service (Invoke,
 * GetDecision and GetReceipt all ask it; nothing is cached): an Invoke for a chain this
 * sidecar did not open. It crosses everything the sidecar adds to grpc-js on every call —
 * server options, protobuf decoding of the InvokeRequest with its Struct payload, validation
 * (zod), Struct → JSON and the payload size check, the Governor's dispatch and call tracking,
 * the invocations counter, the error mapping with its trailing metadata — and ends in
 * NOT_FOUND. The baseline (bare-server.ts, its own process) serves the same method from the
 * same .proto and answers at once with the same status, details and trailer, so the bytes on
 * the wire are identical and the difference is the sidecar's code. A second pair compares
 * the standard grpc.health.v1 Check.
 *
 * Both servers are driven by the same client in this process: a closed loop with --inflight
 * (16) unary calls in flight, requests serialized once up front (identity serializers), so
 * the client's own cost is small and equal for both; --seconds per server and repeat, in
 * one-second slices alternating between them. Figure: calls/s; ratio = sidecar / bare;
 * target ≥ 0.8×. A second row per exchange gives each server's CPU time per call (from /proc;
 * ratio = bare / sidecar): it shows the sidecar's cost even when the client or the other
 * processes of a shared machine, not the server, set the throughput.
 *
 *   npx tsx bench/grpc-passthrough/run.ts [--seconds 5] [--inflight 16] [--repeats 3] [--only health]
 *     [--profile] [--quick]
 *
 * --only: run the exchanges whose figure contains this text. --profile: both servers run with
 * --cpu-prof into bench/results/profiles/grpc-passthrough/.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import path from "node:path";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { gatewayService } from "../../sidecar/wire/proto.js";
import { jsonToStruct } from "../../sidecar/wire/struct.js";
import { freePort } from "../../test/support/postgres.js";
import { repoRoot, teardown } from "../lib/parts.js";
import { cpuSeconds } from "../lib/proc.js";
import { progress, report } from "../lib/report.js";
import { startSidecarProcess } from "../lib/sidecar-process.js";
import { median, type ResultRow, spreadPct } from "../lib/stats.js";

const { values: args } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    inflight: { type: "string", default: "16" },
    repeats: { type: "string", default: "3" },
    only: { type: "string", default: "" },
    profile: { type: "boolean", default: false },
    quick: { type: "boolean", default: false },
  },
});
const quick = args.quick!;
const seconds = quick ? 1 : Number(args.seconds);
const warmupSeconds = quick ? 0.5 : 2;
const inflight = Number(args.inflight);
const repeats = quick ? 1 : Number(args.repeats);
const TARGET = 0.8;
const profileDir = path.join(repoRoot, "bench", "results", "profiles", "grpc-passthrough");
const nodeArgs = args.profile ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];

/** A tool call's arguments of about `bytes` bytes as JSON: nested fields, a list, numbers. */
function payloadOf(bytes: number): Record<string, unknown> {
  const item = (i: number) => ({
    id: i,
    name: `item-${i}`,
    price: 12.5 + i,
    tags: ["a", "b"],
    ok: i % 2 === 0,
  });
  const payload: Record<string, unknown> = {
    query: "invoices due this week",
    filters: { status: "open", currency: "EUR", min_amount: 100 },
    items: [] as unknown[],
  };
  const items = payload.items as unknown[];
  while (JSON.stringify(payload).length < bytes) items.push(item(items.length));
  return payload;
}

/** The exchanges both servers answer: method path, request bytes, the status expected back. */
function exchanges() {
  const invoke = gatewayService().Invoke!;
  const invokeBytes = (payloadBytes: number) =>
    invoke.requestSerialize({
      chain_id: randomUUID(),
      agent_name: "bench-agent",
      action_type: "tool_call",
      action_name: "search_invoices",
      payload: jsonToStruct(payloadOf(payloadBytes)),
      parent_agent_name: "",
      upstream: "tool",
    });
  return [
    {
      figure: "Invoke plumbing, 1 KiB payload (no service call)",
      path: invoke.path,
      request: invokeBytes(1024),
      expect: grpc.status.NOT_FOUND,
    },
    {
      figure: "Invoke plumbing, 32 KiB payload (no service call)",
      path: invoke.path,
      request: invokeBytes(32 * 1024),
      expect: grpc.status.NOT_FOUND,
    },
    {
      figure: "grpc.health.v1 Check",
      path: "/grpc.health.v1.Health/Check",
      request: Buffer.alloc(0), // HealthCheckRequest { service: "" }
      expect: grpc.status.OK,
    },
  ];
}
type Exchange = ReturnType<typeof exchanges>[number];

/** A process under test: its gRPC address and pid. */
interface Server {
  name: string;
  address: string;
  pid: number;
}

/**
 * Drives `exchange` at `server` with `inflight` calls in flight for `secs` seconds; returns the
 * calls answered, the seconds taken and the server's CPU seconds meanwhile.
 */
async function drive(server: Server, exchange: Exchange, secs: number) {
  const client = new grpc.Client(server.address, grpc.credentials.createInsecure(), {
    "grpc.enable_channelz": 0,
  });
  const identity = (b: Buffer) => b;
  const call = () =>
    new Promise<boolean>((resolve) => {
      client.makeUnaryRequest(exchange.path, identity, identity, exchange.request, (err) =>
        resolve((err?.code ?? grpc.status.OK) === exchange.expect),
      );
    });
  let calls = 0;
  let unexpected = 0;
  await call(); // connect
  const cpu0 = cpuSeconds(server.pid);
  const start = performance.now();
  const end = start + secs * 1000;
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (performance.now() < end) {
        if (!(await call())) unexpected++;
        calls++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const cpu = cpuSeconds(server.pid) - cpu0;
  client.close();
  if (unexpected > 0) throw new Error(`${server.name} ${exchange.figure}: ${unexpected} unexpected answers`);
  return { calls, seconds, cpuSeconds: cpu };
}

/** Starts bare-server.ts; resolves with its address once it printed its port. */
async function startBareServer(): Promise<{ server: Server; proc: ChildProcess; stop(): Promise<void> }> {
  const proc = spawn(
    process.execPath,
    [...nodeArgs, "--import", "tsx", "bench/grpc-passthrough/bare-server.ts"],
    {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    proc.stdout!.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
    proc.once("exit", (code) => reject(new Error(`bare server exited with ${code}`)));
  });
  return {
    server: { name: "bare grpc-js", address: `127.0.0.1:${port}`, pid: proc.pid! },
    proc,
    async stop() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    },
  };
}

async function main() {
  progress(`grpc-passthrough: ${inflight} in flight, ${seconds}s per run, ${repeats} repeats`);
  const stops = teardown();
  const rows: ResultRow[] = [];
  try {
    // Nothing listens at the service URL: no call measured here reaches the service.
    const sidecarProc = await startSidecarProcess({
      serviceUrl: `http://127.0.0.1:${await freePort()}`,
      apiKey: `tgk_${randomBytes(24).toString("base64url")}`,
      upstreams: [{ name: "tool", type: "http", url: `http://127.0.0.1:${await freePort()}/tool` }],
      env: { NODE_ENV: "production" },
      nodeArgs,
    });
    stops.push(() => sidecarProc.stop());
    const bare = await startBareServer();
    stops.push(() => bare.stop());
    const sidecar: Server = { name: "sidecar", address: sidecarProc.grpcAddress, pid: sidecarProc.proc.pid! };

    for (const exchange of exchanges().filter((e) => e.figure.includes(args.only!))) {
      for (const server of [sidecar, bare.server]) await drive(server, exchange, warmupSeconds);
      const runs: { sidecar: number; bare: number; sidecarCpu: number; bareCpu: number }[] = [];
      for (let i = 0; i < repeats; i++) {
        // One-second slices, alternating between the servers, so that drift in the load of
        // this shared machine hits both alike.
        const totals = new Map(
          [sidecar, bare.server].map((server) => [server, { calls: 0, secs: 0, cpu: 0 }]),
        );
        for (let slice = 0; slice < seconds; slice++) {
          const order = slice % 2 === 0 ? [sidecar, bare.server] : [bare.server, sidecar];
          for (const server of order) {
            const r = await drive(server, exchange, 1);
            const t = totals.get(server)!;
            t.calls += r.calls;
            t.secs += r.seconds;
            t.cpu += r.cpuSeconds;
          }
        }
        const rate = (server: Server) => totals.get(server)!.calls / totals.get(server)!.secs;
        const cpuUs = (server: Server) => (totals.get(server)!.cpu / totals.get(server)!.calls) * 1e6;
        const s = { perSecond: rate(sidecar), cpuUsPerCall: cpuUs(sidecar) };
        const b = { perSecond: rate(bare.server), cpuUsPerCall: cpuUs(bare.server) };
        runs.push({
          sidecar: s.perSecond,
          bare: b.perSecond,
          sidecarCpu: s.cpuUsPerCall,
          bareCpu: b.cpuUsPerCall,
        });
        progress(
          `  ${exchange.figure}, run ${i + 1}: sidecar ${s.perSecond.toFixed(0)}/s (${s.cpuUsPerCall.toFixed(0)} µs CPU/call), bare ${b.perSecond.toFixed(0)}/s (${b.cpuUsPerCall.toFixed(0)} µs CPU/call), ${(s.perSecond / b.perSecond).toFixed(2)}×`,
        );
      }
      const ratios = runs.map((r) => r.sidecar / r.bare);
      rows.push({
        benchmark: "grpc-passthrough",
        figure: `${exchange.figure}, ${inflight} in flight`,
        value: median(runs.map((r) => r.sidecar)),
        unit: "calls/s",
        baseline: "bare grpc-js, same exchange",
        baselineValue: median(runs.map((r) => r.bare)),
        ratio: median(ratios),
        better: "higher",
        target: `≥ ${TARGET}× bare`,
        met: median(ratios) >= TARGET,
        spreadPct: spreadPct(ratios),
        repeats,
      });
      const cpuRatios = runs.map((r) => r.bareCpu / r.sidecarCpu);
      rows.push({
        benchmark: "grpc-passthrough",
        figure: `server CPU per call, ${exchange.figure}`,
        value: median(runs.map((r) => r.sidecarCpu)),
        unit: "µs",
        baseline: "bare grpc-js, same exchange",
        baselineValue: median(runs.map((r) => r.bareCpu)),
        ratio: median(cpuRatios),
        better: "lower",
        target: "—",
        met: null,
        spreadPct: spreadPct(cpuRatios),
        repeats,
      });
    }
  } finally {
    await stops.stopAll();
  }
  report("grpc-passthrough", rows, { inflight, seconds });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
