/**
 * The sidecar → service hop's transport alone: CPU per request of node:http keep-alive
 * (HTTP/1.1, what the sidecar uses, sidecar/service-fetch.ts) against node:http2 (one
 * multiplexed h2c session), for a record-action-sized POST and decision-sized answer, one at a
 * time and 16 in flight. The server runs as its own process (its CPU read from /proc); the
 * client is this process. Nothing of Tollgate runs: it shows what the hop's design alone costs
 * on this machine, the floor that a change of transport could move (issue 30).
 *
 *   node --import tsx bench/sidecar-overhead/hop-transport.ts [--requests 10000]
 *
 * Prints one line per protocol, concurrency and round; writes no results file.
 */
import { spawn } from "node:child_process";
import http from "node:http";
import http2 from "node:http2";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { processCpu } from "../lib/proc.js";

const DECISION = JSON.stringify({
  policy_decision: "allow",
  decision_reason: "x".repeat(200),
  decision_source: "policy",
  policy_name: null,
  kill_switch_active: false,
  auto_paused: false,
  event_id: "0b6c3f1e-9a51-4f0e-8f54-7f1d3c1f2a11",
  sequence: 12,
  category: "read",
  approval_id: null,
  exception_id: null,
  chain_status: "active",
});
const ACTION = JSON.stringify({
  agent_name: "bench-agent",
  action_type: "tool_call",
  action_name: "search",
  payload: { query: "weather in Paris", units: "metric", limit: 5 },
});
const PATH = "/v1/chains/0b6c3f1e-9a51-4f0e-8f54-7f1d3c1f2a11/actions";
const HEADERS = {
  accept: "application/json",
  authorization: "Bearer tg_abcdefabcdefabcdefabcdef",
  "content-type": "application/json",
  "content-length": Buffer.byteLength(ACTION),
};

/** The server side: an HTTP/1.1 and an h2c server answering every POST with DECISION. */
async function serve(): Promise<void> {
  /** Reads the request, then answers DECISION (both servers' response objects fit this shape). */
  const respond = (
    req: { resume(): unknown; on(event: "end", listener: () => void): unknown },
    res: {
      writeHead(status: number, headers: Record<string, string | number>): unknown;
      end(body: string): unknown;
    },
  ) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(DECISION),
      });
      res.end(DECISION);
    });
  };
  const h1 = http.createServer((req, res) => respond(req, res));
  h1.keepAliveTimeout = 600_000;
  const h2 = http2.createServer((req, res) => respond(req, res));
  await new Promise<void>((r) => h1.listen(0, "127.0.0.1", r));
  await new Promise<void>((r) => h2.listen(0, "127.0.0.1", r));
  const port = (s: http.Server | http2.Http2Server) => (s.address() as { port: number }).port;
  process.stdout.write(`${port(h1)} ${port(h2)}\n`);
}

const read = (stream: NodeJS.ReadableStream, resolve: (v: unknown) => void) => {
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  stream.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { requests: { type: "string", default: "10000" }, serve: { type: "boolean" } },
  });
  if (values.serve) return serve();
  const n = Number(values.requests);
  const server = spawn(process.execPath, ["--import", "tsx", import.meta.filename, "--serve"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise<string>((r) => createInterface({ input: server.stdout! }).once("line", r));
  const [p1, p2] = line.split(" ").map(Number);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const session = http2.connect(`http://127.0.0.1:${p2}`);
  const protocols: [string, () => Promise<unknown>][] = [
    [
      "http/1.1 keep-alive",
      () =>
        new Promise((resolve, reject) => {
          const req = http.request(
            { host: "127.0.0.1", port: p1, path: PATH, method: "POST", agent, headers: HEADERS },
            (res) => read(res, resolve),
          );
          req.on("error", reject);
          req.end(ACTION);
        }),
    ],
    [
      "http/2 one session",
      () =>
        new Promise((resolve, reject) => {
          const stream = session.request({ ":method": "POST", ":path": PATH, ...HEADERS });
          read(stream, resolve);
          stream.on("error", reject);
          stream.end(ACTION);
        }),
    ],
  ];
  const run = async (call: () => Promise<unknown>, count: number, concurrency: number) => {
    let started = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (started++ < count) await call();
      }),
    );
  };
  try {
    for (const concurrency of [1, 16])
      for (let round = 1; round <= 2; round++)
        for (const [name, call] of protocols) {
          await run(call, Math.min(n, 2000), concurrency);
          const [own0, srv0, t0] = [process.cpuUsage(), processCpu(server.pid!), performance.now()];
          await run(call, n, concurrency);
          const own = process.cpuUsage(own0);
          const srv = processCpu(server.pid!);
          const perSecond = Math.round((n / (performance.now() - t0)) * 1000);
          const serverUs = (srv.userUs + srv.systemUs - srv0.userUs - srv0.systemUs) / n;
          process.stdout.write(
            `${name}, ${concurrency} in flight, round ${round}: client ${((own.user + own.system) / n).toFixed(1)} µs/request (system ${(own.system / n).toFixed(1)}), server ${serverUs.toFixed(1)} µs/request, ${perSecond} requests/s\n`,
          );
        }
  } finally {
    session.close();
    agent.destroy();
    server.kill();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
