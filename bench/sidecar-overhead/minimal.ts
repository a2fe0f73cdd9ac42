/**
 * sidecar-overhead's floor: the same hops as a governed call with almost nothing done at any of
 * them, to show what the hops alone cost on this machine. A bare grpc-js server of the same
 * ToolGateway proto whose Invoke POSTs the action to a bare decision server (DECISION_URL:
 * bench/record-action/minimal.ts, one INSERT per request), then (when `upstream` is set) the
 * payload to the tool (UPSTREAM_URL), over node:http keep-alive, and answers "allow": a
 * "sidecar" with no validation, sanitizing, policy, metrics or outcome reports.
 *
 *   node --import tsx bench/sidecar-overhead/minimal.ts   (env DECISION_URL, UPSTREAM_URL)
 *
 * Prints `host:port` on stdout once listening; stops on SIGTERM. Client → relay → decision
 * server → PostgreSQL → relay → tool → relay → client are the hops a governed call cannot
 * avoid; the bench reports the relay's added latency beside the real sidecar's.
 */
import http from "node:http";
import * as grpc from "@grpc/grpc-js";
import { gatewayService } from "../../sidecar/wire/proto.js";
import { structToJson } from "../../sidecar/wire/struct.js";
import { directCall } from "./direct-call.js";

const decisionUrl = process.env.DECISION_URL!;
const upstreamUrl = new URL(process.env.UPSTREAM_URL!);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64, timeout: 30_000 });
const decision = { policy_decision: "allow" };
const server = new grpc.Server();
const unimplemented: grpc.handleUnaryCall<unknown, unknown> = (_call, cb) =>
  cb({ code: grpc.status.UNIMPLEMENTED });
server.addService(gatewayService(), {
  OpenChain: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { chain_id: "minimal" }),
  Invoke: (
    call: grpc.ServerUnaryCall<
      { chain_id: string; agent_name: string; action_name: string; payload: never; upstream: string },
      unknown
    >,
    cb: grpc.sendUnaryData<unknown>,
  ) => {
    const { chain_id, agent_name, action_name, payload, upstream } = call.request;
    const args = structToJson(payload);
    void (async () => {
      const action = JSON.stringify({ agent_name, action_name, payload: args });
      await directCall(new URL(`/v1/chains/${chain_id}/actions`, decisionUrl), agent, action);
      if (!upstream) return cb(null, { decision, forwarded: false });
      const result_json = await directCall(upstreamUrl, agent, JSON.stringify(args));
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
