/**
 * sidecar-overhead's floor: the same hops as a governed call with almost nothing done at any of
 * them, to show what the hops alone cost on this machine.
 *
 *   node --import tsx bench/sidecar-overhead/minimal.ts decision   (env DATABASE_URL)
 *     a bare Fastify server: POST /decide INSERTs the JSON body as one row (one statement
 *     through a `pg` pool) and answers {"policy_decision":"allow"}: a "service" with no auth,
 *     policy, chain state or group commit;
 *   node --import tsx bench/sidecar-overhead/minimal.ts relay      (env DECISION_URL, UPSTREAM_URL)
 *     a bare grpc-js server of the same ToolGateway proto whose Invoke POSTs the action to the
 *     decision server, then (when `upstream` is set) the payload to the upstream, over node:http
 *     keep-alive, and answers: a "sidecar" with no validation, sanitizing, metrics or outcome
 *     reports.
 *
 * Each prints its address (`http://…` or `host:port`) on stdout once listening and stops on
 * SIGTERM. Client → relay → decision server → PostgreSQL → relay → upstream → relay → client
 * are the hops a governed call cannot avoid; the bench reports the relay's added latency beside
 * the real sidecar's.
 */
import http from "node:http";
import * as grpc from "@grpc/grpc-js";
import Fastify from "fastify";
import pg from "pg";
import { gatewayService } from "../../sidecar/proto.js";
import { structToJson } from "../../sidecar/struct.js";

const role = process.argv[2];

/** POSTs `body` (JSON text) to `url` over `agent`; resolves with the response text. */
function post(url: URL, agent: http.Agent, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

if (role === "decision") {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 4 });
  await pool.query(
    "CREATE TABLE IF NOT EXISTS minimal_decisions (id bigserial PRIMARY KEY, body jsonb NOT NULL)",
  );
  const app = Fastify({ logger: false });
  app.post("/decide", async (req) => {
    await pool.query({
      name: "minimal_decide",
      text: "INSERT INTO minimal_decisions (body) VALUES ($1)",
      values: [req.body],
    });
    return { policy_decision: "allow" };
  });
  process.stdout.write(`${await app.listen({ port: 0, host: "127.0.0.1" })}\n`);
  process.on(
    "SIGTERM",
    () =>
      void app
        .close()
        .then(() => pool.end())
        .then(() => process.exit(0)),
  );
} else if (role === "relay") {
  const decisionUrl = new URL("/decide", process.env.DECISION_URL);
  const upstreamUrl = new URL(process.env.UPSTREAM_URL!);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 30_000 });
  const server = new grpc.Server();
  const unimplemented: grpc.handleUnaryCall<unknown, unknown> = (_call, cb) =>
    cb({ code: grpc.status.UNIMPLEMENTED });
  server.addService(gatewayService(), {
    OpenChain: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { chain_id: "minimal" }),
    Invoke: (
      call: grpc.ServerUnaryCall<
        { agent_name: string; action_name: string; payload: never; upstream: string },
        unknown
      >,
      cb: grpc.sendUnaryData<unknown>,
    ) => {
      const { agent_name, action_name, payload, upstream } = call.request;
      const args = structToJson(payload);
      void (async () => {
        const decision = JSON.parse(
          await post(decisionUrl, agent, JSON.stringify({ agent_name, action_name, args })),
        );
        if (!upstream) return cb(null, { decision, forwarded: false });
        const result_json = await post(upstreamUrl, agent, JSON.stringify(args));
        cb(null, { decision, forwarded: true, result_json, upstream_status: 200 });
      })().catch((err: Error) => cb({ code: grpc.status.UNAVAILABLE, details: err.message }));
    },
    CompleteChain: unimplemented,
    GetReceipt: unimplemented,
    GetDecision: unimplemented,
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  process.stdout.write(`127.0.0.1:${port}\n`);
  process.on("SIGTERM", () => server.tryShutdown(() => process.exit(0)));
} else {
  process.stderr.write("usage: minimal.ts decision|relay\n");
  process.exit(2);
}
